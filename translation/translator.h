#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "decode/id_translator.h"
#include "model/attention_maps.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

/// One alternative translation of a sentence.
struct Candidate {
  std::string text;
  std::vector<std::string> pieces;
  std::vector<int64_t> ids;  // the subword ids of `pieces` (no </s>)
  double score = 0.0;        // log-probability / length penalty
};

struct Translation {
  std::vector<Candidate> nbest;     // best first; empty for an empty input line
  bool truncated = false;           // the input was longer than Translator::source_limit()
  bool at_max_length = false;       // the best took all the search's maximum output length: maybe cut short
  std::vector<int64_t> source_ids;  // what the model read (after truncation; no </s>)
  const std::string& text() const;
};

/// One sentence pair's attention weights (decode/attention_probe.h) with the subwords that
/// label them.
struct SentenceAttention {
  std::vector<std::string> source_pieces;   // S: the source subwords, then </s>
  std::vector<std::string> target_inputs;   // T: <s>, then the hypothesis subwords (decoder self-attention keys)
  std::vector<std::string> target_outputs;  // T: the hypothesis subwords, then </s> (what each query row predicts)
  AttentionMaps maps;                       // encoder_self [H, S, S], decoder_self [H, T, T], cross [H, T, S]
};

/// `maps` (decode/attention_probe.h) labelled with the subwords of its source and hypothesis
/// (ids without </s>).
SentenceAttention labelled_attention(const Tokenizer& tokenizer, const std::vector<int64_t>& source_ids,
                                     const std::vector<int64_t>& hypothesis_ids, AttentionMaps maps);

/// `translated` in text: each candidate detokenized, with its subwords.
Translation to_text(const Tokenizer& tokenizer, IdTranslation translated);

/// Raw text in, detokenized text out: tokenizes each line, translates the ids (IdTranslator:
/// batching by tokens, search, input order restored) and detokenizes every candidate.
class Translator {
 public:
  /// As IdTranslator; std::invalid_argument when a model's vocabulary is not the tokenizer's.
  Translator(std::vector<Transformer> models, Tokenizer tokenizer, const TranslatorOptions& options,
             const torch::Device& device, Shortlist shortlist = Shortlist());

  /// One Translation per line, in the order given.
  std::vector<Translation> translate(const std::vector<std::string>& lines);

  /// The attention weights of the first model (an ensemble's members each have their own) over
  /// a translated line's candidate, as it computes them for that hypothesis.
  SentenceAttention attention(const Translation& translation, size_t candidate = 0);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  /// The id-level translator underneath (a server batches ids from many requests through it).
  IdTranslator& ids() { return ids_; }

  int64_t target_tokens() const { return ids_.target_tokens(); }  // subwords produced so far (best hypotheses)
  /// The longest input read, in subwords (IdTranslator::source_limit).
  int64_t source_limit() const { return ids_.source_limit(); }

 private:
  Tokenizer tokenizer_;
  IdTranslator ids_;
};

}  // namespace tfm
