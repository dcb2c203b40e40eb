#include "translation/translator.h"

#include <stdexcept>
#include <utility>

#include "text/special_ids.h"

namespace tfm {
namespace {

const std::string kEmpty;

/// The models, after checking that each speaks the tokenizer's vocabulary.
std::vector<Transformer> checked(std::vector<Transformer> models, const Tokenizer& tokenizer) {
  for (const auto& model : models) {
    if (model->config().vocab_size != tokenizer.vocab_size()) {
      throw std::invalid_argument("model vocabulary " + std::to_string(model->config().vocab_size) +
                                  " != tokenizer vocabulary " + std::to_string(tokenizer.vocab_size()));
    }
  }
  return models;
}

}  // namespace

const std::string& Translation::text() const { return nbest.empty() ? kEmpty : nbest.front().text; }

Translator::Translator(std::vector<Transformer> models, Tokenizer tokenizer, const TranslatorOptions& options,
                       const torch::Device& device, Shortlist shortlist)
    : tokenizer_(std::move(tokenizer)),
      ids_(checked(std::move(models), tokenizer_), options, device, std::move(shortlist)) {}

std::vector<Translation> Translator::translate(const std::vector<std::string>& lines) {
  std::vector<std::vector<int64_t>> sources;
  sources.reserve(lines.size());
  for (const auto& line : lines) sources.push_back(tokenizer_.encode(line));
  std::vector<IdTranslation> translated = ids_.translate(std::move(sources));
  std::vector<Translation> out;
  out.reserve(translated.size());
  for (auto& sentence : translated) out.push_back(to_text(tokenizer_, std::move(sentence)));
  return out;
}

Translation to_text(const Tokenizer& tokenizer, IdTranslation translated) {
  Translation out;
  out.truncated = translated.truncated;
  out.at_max_length = translated.at_max_length;
  out.source_ids = std::move(translated.source_ids);
  for (auto& hypothesis : translated.nbest) {
    Candidate candidate;
    candidate.text = tokenizer.decode(hypothesis.tokens);
    for (const int64_t id : hypothesis.tokens) candidate.pieces.push_back(tokenizer.id_to_piece(id));
    candidate.ids = std::move(hypothesis.tokens);
    candidate.score = hypothesis.score;
    out.nbest.push_back(std::move(candidate));
  }
  return out;
}

SentenceAttention labelled_attention(const Tokenizer& tokenizer, const std::vector<int64_t>& source_ids,
                                     const std::vector<int64_t>& hypothesis_ids, AttentionMaps maps) {
  SentenceAttention result;
  for (const int64_t id : source_ids) result.source_pieces.push_back(tokenizer.id_to_piece(id));
  result.source_pieces.push_back(tokenizer.id_to_piece(kEosId));
  result.target_inputs.push_back(tokenizer.id_to_piece(kBosId));
  for (const int64_t id : hypothesis_ids) {
    result.target_inputs.push_back(tokenizer.id_to_piece(id));
    result.target_outputs.push_back(tokenizer.id_to_piece(id));
  }
  result.target_outputs.push_back(tokenizer.id_to_piece(kEosId));
  result.maps = std::move(maps);
  return result;
}

SentenceAttention Translator::attention(const Translation& translation, size_t candidate) {
  if (candidate >= translation.nbest.size()) throw std::out_of_range("Translator::attention: no such candidate");
  const auto& hypothesis = translation.nbest[candidate].ids;
  return labelled_attention(tokenizer_, translation.source_ids, hypothesis,
                            ids_.attention(translation.source_ids, hypothesis));
}

}  // namespace tfm
