#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "decode/scorer.h"
#include "decode/search_strategy.h"

namespace tfm {

/// Sampling (fairseq's --sampling-topk/--sampling-topp, CTranslate2's sampling_topk/topp,
/// Marian's --output-sampling): one row per sentence, each step's token drawn from the model's
/// distribution after the logits processors, cut to the top k tokens and/or the top-p nucleus and
/// divided by the temperature. The draws come from one generator seeded once: the same input,
/// options and seed give the same translations on any device (probabilities are drawn from on
/// the CPU). A hypothesis's score is the model's log-probability of what was drawn.
class SamplingSearch : public SearchStrategy {
 public:
  explicit SamplingSearch(const SearchOptions& options);
  std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                              const std::vector<int64_t>& source_lengths) override;

 private:
  SearchOptions options_;
  at::Generator generator_;
};

/// log_probs [N, V] -> logits [N, V] for the draw: divided by the temperature, -inf outside each
/// row's top k (k > 0) and outside its top-p nucleus (p < 1; the most probable token always stays).
torch::Tensor sampling_logits(const torch::Tensor& log_probs, const SamplingOptions& options);

}  // namespace tfm
