#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "decode/attention_probe.h"
#include "decode/hypothesis.h"
#include "decode/search_strategy.h"
#include "model/shortlist.h"
#include "model/transformer.h"
#include "runtime/precision.h"

namespace tfm {

struct TranslatorOptions {
  SearchOptions search;
  int64_t max_tokens = 6000;      // padded source tokens per batch
  int64_t batch_size = 0;         // sentences per batch (0 = bounded by max_tokens only)
  int64_t max_source_len = 1024;  // longer inputs are truncated (and flagged)
  Precision precision = Precision::kFloat32;
  bool quantize_int8 = false;  // int8 linear layers (CPU, float32 weights): model/linear.h
};

void validate(const TranslatorOptions& options);

/// One sentence's translation, as ids.
struct IdTranslation {
  std::vector<Hypothesis> nbest;    // best first; empty for an empty source
  bool truncated = false;           // the source was longer than IdTranslator::source_limit()
  std::vector<int64_t> source_ids;  // what the model read (after truncation; no </s>)
};

/// Ids in, ids and scores out (CTranslate2's Translator over tokens; text stays a layer up, in
/// translation/): truncates each source to what the models can read, sorts by length, batches
/// by padded source tokens, runs the search strategy on one model or an ensemble, and returns
/// the results in the order given.
class IdTranslator {
 public:
  /// Models already on `device` in the precision asked for are used as they are; any other is
  /// copied, and the copy moved, converted (bf16/fp16) and, with quantize_int8, packed as int8. A
  /// model the caller still holds (the trainer's, validated during training) keeps its weights,
  /// dtype and device; translate() runs in evaluation mode and restores the mode it found.
  /// With a non-empty `shortlist`, every batch is scored over its candidates only
  /// (model/shortlist.h); std::invalid_argument when it does not cover the models' vocabulary.
  IdTranslator(std::vector<Transformer> models, const TranslatorOptions& options, const torch::Device& device,
               Shortlist shortlist = Shortlist());

  /// One IdTranslation per source (subword ids without </s>), in the order given.
  std::vector<IdTranslation> translate(std::vector<std::vector<int64_t>> sources);
  /// The same with other search settings for this call only (a server's per-request beam, length
  /// penalty or n-best): the batching, precision and models stay the translator's. Several threads
  /// may call this at once when the models are in evaluation mode (the translator's own copies
  /// are; a server's loaded models are put in it). std::invalid_argument for invalid settings.
  std::vector<IdTranslation> translate(std::vector<std::vector<int64_t>> sources, const SearchOptions& search);
  /// The search settings translate() uses (after the models' position limits).
  const SearchOptions& search_options() const { return options_.search; }

  /// The first model's attention (an ensemble's members each have their own) over a source and
  /// one of its hypotheses (ids without </s>), as it computed them decoding.
  AttentionMaps attention(const std::vector<int64_t>& source_ids, const std::vector<int64_t>& hypothesis_ids);

  int64_t vocab_size() const;
  /// The longest source read, in subwords: max_source_len, or less where a model with learned
  /// positions cannot place more. Longer sources are truncated to it and flagged.
  int64_t source_limit() const { return source_limit_; }
  int64_t target_tokens() const { return target_tokens_.value; }  // subwords produced so far (best hypotheses)

 private:
  std::vector<IdTranslation> translate_with(std::vector<std::vector<int64_t>> sources, SearchStrategy& search,
                                            int64_t beam);
  void translate_batch(const std::vector<std::vector<int64_t>>& sources, const std::vector<size_t>& rows,
                       SearchStrategy& search, int64_t beam, std::vector<IdTranslation>& out);
  /// `search` limited to the longest output the models can position.
  SearchOptions within_position_limit(SearchOptions search) const;

  std::vector<Transformer> models_;
  Shortlist shortlist_;
  TranslatorOptions options_;
  torch::Device device_;
  int64_t source_limit_ = 0;
  std::unique_ptr<SearchStrategy> search_;  // one for the translator's life: sampling's draws go on across batches
  /// A count several decoding threads add to; moves with the translator.
  struct Count {
    std::atomic<int64_t> value{0};
    Count() = default;
    Count(Count&& other) noexcept : value(other.value.load()) {}
    Count& operator=(Count&& other) noexcept {
      value = other.value.load();
      return *this;
    }
  };
  Count target_tokens_;
};

}  // namespace tfm
