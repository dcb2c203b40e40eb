#include "decode/sampling_search.h"

#include <limits>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "decode/greedy_search.h"

namespace tfm {

torch::Tensor sampling_logits(const torch::Tensor& log_probs, const SamplingOptions& options) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  auto logits = log_probs.to(torch::kFloat32) / options.temperature;  // [N, V]
  const int64_t vocab = logits.size(1);
  if (options.top_k > 0 && options.top_k < vocab) {
    const auto kth = std::get<0>(logits.topk(options.top_k, 1)).select(1, options.top_k - 1).unsqueeze(1);  // [N, 1]
    logits = logits.masked_fill(logits < kth, kNegInf);
  }
  if (options.top_p < 1.0) {
    const auto [sorted, order] = logits.sort(1, /*descending=*/true);  // [N, V]
    // Probability mass before each token (in the sorted order): a token stays while that is below p.
    const auto before = sorted.softmax(1).cumsum(1) - sorted.softmax(1);
    // The most probable token is always kept: a p below float32's smallest number rounds to 0,
    // which the first token's 0 before it would reach.
    const auto drop_sorted = before >= options.top_p;
    drop_sorted.narrow(1, 0, 1).fill_(false);
    logits = logits.masked_fill(torch::zeros_like(drop_sorted).scatter(1, order, drop_sorted), kNegInf);
  }
  return logits;
}

SamplingSearch::SamplingSearch(const SearchOptions& options)
    : options_(options), generator_(at::detail::createCPUGenerator(options.sampling.seed)) {
  validate(options_);
}

std::vector<std::vector<Hypothesis>> SamplingSearch::search(Scorer& scorer, const torch::Tensor& source,
                                                            const std::vector<int64_t>& source_lengths) {
  SearchOptions one_row = options_;
  one_row.beam = 1;
  return row_search(scorer, source, source_lengths, one_row, [&](const torch::Tensor& log_probs) {
    const auto probabilities = sampling_logits(log_probs, options_.sampling).softmax(1).to(torch::kCPU);  // [N, V]
    const auto ids = torch::multinomial(probabilities, 1, /*replacement=*/false, generator_)
                         .squeeze(1)
                         .to(log_probs.device());  // [N]
    return std::make_pair(ids, log_probs.gather(1, ids.unsqueeze(1)).squeeze(1));
  });
}

}  // namespace tfm
