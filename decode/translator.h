#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "decode/attention_probe.h"
#include "decode/search_strategy.h"
#include "model/transformer.h"
#include "runtime/precision.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

struct TranslatorOptions {
  SearchOptions search;
  int64_t max_tokens = 6000;      // padded source tokens per batch
  int64_t batch_size = 0;         // sentences per batch (0 = bounded by max_tokens only)
  int64_t max_source_len = 1024;  // longer inputs are truncated (and flagged)
  Precision precision = Precision::kFloat32;
  bool quantize_int8 = false;     // int8 linear layers (CPU, float32 weights): model/linear.h
};

void validate(const TranslatorOptions& options);

/// One alternative translation of a sentence.
struct Candidate {
  std::string text;
  std::vector<std::string> pieces;
  std::vector<int64_t> ids;  // the subword ids of `pieces` (no </s>)
  double score = 0.0;  // log-probability / length penalty
};

struct Translation {
  std::vector<Candidate> nbest;  // best first; empty for an empty input line
  bool truncated = false;        // the input was longer than Translator::source_limit()
  std::vector<int64_t> source_ids;  // what the model read (after truncation; no </s>)
  const std::string& text() const;
};

/// Raw text in, detokenized text out: tokenizes, sorts by length, batches by token count,
/// runs beam search on one model or an ensemble, and restores the input order.
class Translator {
 public:
  /// Models already on `device` in the precision asked for are used as they are; any other is
  /// copied, and the copy moved, converted (bf16/fp16) and, with quantize_int8, packed as int8. A
  /// model the caller still holds (the trainer's, validated during training) keeps its weights,
  /// dtype and device; translate() runs in evaluation mode and restores the mode it found.
  Translator(std::vector<Transformer> models, Tokenizer tokenizer, const TranslatorOptions& options,
             const torch::Device& device);

  /// One Translation per line, in the order given.
  std::vector<Translation> translate(const std::vector<std::string>& lines);

  /// The attention weights of the first model (an ensemble's members each have their own) over
  /// a translated line's candidate, as it computes them for that hypothesis.
  SentenceAttention attention(const Translation& translation, size_t candidate = 0);

  int64_t target_tokens() const { return target_tokens_; }  // subwords produced so far (best hypotheses)
  /// The longest input read, in subwords: --max-source-len, or less where a model with learned
  /// positions cannot place more. Longer inputs are truncated to it and flagged.
  int64_t source_limit() const { return source_limit_; }

 private:
  void translate_batch(const std::vector<std::vector<int64_t>>& sources, const std::vector<size_t>& rows,
                       std::vector<Translation>& out);

  std::vector<Transformer> models_;
  Tokenizer tokenizer_;
  TranslatorOptions options_;
  torch::Device device_;
  int64_t source_limit_ = 0;
  std::unique_ptr<SearchStrategy> search_;  // one for the translator's life: sampling's draws go on across batches
  int64_t target_tokens_ = 0;
};

}  // namespace tfm
