#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "decode/scorer.h"
#include "decode/search_strategy.h"

namespace tfm {

/// Picks each row's next token from its processed log-probabilities [N, V]: returns the tokens
/// [N] (int64) and their log-probabilities [N].
using TokenChoice = std::function<std::pair<torch::Tensor, torch::Tensor>(const torch::Tensor& log_probs)>;

/// One row per sentence: at every step each sentence takes the token `choose` picks, after the
/// logits processors, and leaves the batch at eos or its maximum length; the state shrinks as
/// sentences finish. Returns one hypothesis per sentence, scored as beam search scores them.
std::vector<std::vector<Hypothesis>> row_search(Scorer& scorer, const torch::Tensor& source,
                                                const std::vector<int64_t>& source_lengths,
                                                const SearchOptions& options, const TokenChoice& choose);

/// Greedy decoding: row_search taking each row's most probable token (what beam 1 finds, with
/// no beam bookkeeping and no top-k).
std::vector<std::vector<Hypothesis>> greedy_search(Scorer& scorer, const torch::Tensor& source,
                                                   const std::vector<int64_t>& source_lengths,
                                                   const SearchOptions& options);

class GreedySearch : public SearchStrategy {
 public:
  explicit GreedySearch(const SearchOptions& options) : options_(options) {}
  std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                              const std::vector<int64_t>& source_lengths) override {
    return greedy_search(scorer, source, source_lengths, options_);
  }

 private:
  SearchOptions options_;
};

}  // namespace tfm
