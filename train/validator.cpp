#include "train/validator.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "data/batching.h"
#include "metrics/bleu.h"
#include "model/teacher_forcing_loss.h"
#include "runtime/errors.h"
#include "runtime/page_pool.h"
#include "runtime/precision.h"
#include "text/special_ids.h"
#include "translation/translator.h"

namespace tfm {
namespace {

/// Source and reference texts of a tokenized split, for BLEU (decoded from the ids it holds).
std::pair<std::vector<std::string>, std::vector<std::string>> split_texts(const Shard& data, const Tokenizer& tokenizer,
                                                                          int64_t limit) {
  const int64_t n = limit > 0 ? std::min(limit, data.size()) : data.size();
  std::vector<std::string> sources, references;
  for (int64_t i = 0; i < n; ++i) {
    const auto [source, target] = data.pair_ids(i);
    sources.push_back(tokenizer.decode(source));
    references.push_back(tokenizer.decode(target));
  }
  return {sources, references};
}

}  // namespace

Validator::Validator(const TrainOptions& options, Tokenizer tokenizer, const torch::Device& device)
    : options_(options), tokenizer_(std::move(tokenizer)), device_(device) {}

ValidationResult Validator::run(Transformer model, const Shard& valid) const {
  valid.verify();
  const Precision precision = parse_precision(options_.dtype);  // resolved by the Trainer, as UpdateStep reads it
  ValidationResult result;
  model->eval();
  {
    torch::NoGradGuard no_grad;
    double loss = 0, nll = 0;
    int64_t tokens = 0;
    for (const auto& rows : make_batches(valid, options_.batching, 0)) {
      const Batch batch = collate(valid, rows);
      const auto sums = naming_batch_on_out_of_memory(
          [&] { return "validation's " + describe(batch); },
          [&] {
            const AutocastGuard autocast(device_, precision);
            return teacher_forcing_loss(model, batch.source.to(device_), batch.target_in.to(device_),
                                        batch.target_out.to(device_), options_.label_smoothing, kPadId);
          });
      loss += sums.loss.item<double>();
      nll += sums.nll.item<double>();
      tokens += batch.target_tokens;
    }
    result.loss = loss / std::max<int64_t>(tokens, 1);
    result.nll = nll / std::max<int64_t>(tokens, 1);
    result.ppl = std::exp(result.nll);
  }
  const auto [sources, references] = split_texts(valid, tokenizer_, options_.valid_max_sentences);
  TranslatorOptions translator_options;
  translator_options.search.beam = options_.valid_beam;
  translator_options.max_tokens = options_.batching.max_tokens;
  translator_options.precision = precision;
  Translator translator({model}, tokenizer_, translator_options, device_);
  std::vector<std::string> hypotheses;
  for (const auto& translation : translator.translate(sources)) hypotheses.push_back(translation.text());
  // The decoder's caches came from the page pool, which would keep them through the updates until
  // the next validation: training's own tensors get those pages instead.
  PagePool::shared().release_free();
  result.bleu = corpus_bleu(hypotheses, {references}, BleuOptions()).score;
  result.sentences = static_cast<int64_t>(sources.size());
  model->train();
  return result;
}

bool Validator::record(const ValidationResult& result, TrainingProgress& progress) const {
  const bool by_bleu = options_.best_metric == "bleu";
  const double metric = by_bleu ? result.bleu : result.loss;
  const bool is_best = std::isnan(progress.best) || (by_bleu ? metric > progress.best : metric < progress.best);
  if (is_best) {
    progress.best = metric;
    progress.validations_without_improvement = 0;
  } else {
    ++progress.validations_without_improvement;
  }
  return is_best;
}

}  // namespace tfm
