#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "decode/scorer.h"
#include "decode/search_strategy.h"

namespace tfm {

/// Translates a batch by beam search (§6.1). source: [B, S] (eos-terminated, pad-filled);
/// source_lengths[b] is sentence b's subword count without eos, for the maximum output length.
/// Returns, per sentence, up to `nbest` hypotheses, best first. Stops a sentence once no
/// unfinished hypothesis can still beat its n-best finished ones (or at the maximum length),
/// and drops it from the batch.
std::vector<std::vector<Hypothesis>> beam_search(Scorer& scorer, const torch::Tensor& source,
                                                 const std::vector<int64_t>& source_lengths,
                                                 const SearchOptions& options);

class BeamSearch : public SearchStrategy {
 public:
  explicit BeamSearch(const SearchOptions& options) : options_(options) {}
  std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                              const std::vector<int64_t>& source_lengths) override {
    return beam_search(scorer, source, source_lengths, options_);
  }

 private:
  SearchOptions options_;
};

}  // namespace tfm
