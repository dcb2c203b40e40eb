#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Summed losses over the non-pad target tokens of a batch.
struct LossSums {
  torch::Tensor loss;  // label-smoothed cross-entropy (what training minimises), scalar
  torch::Tensor nll;   // plain negative log-likelihood (for perplexity), scalar, no gradient
  int64_t tokens = 0;  // non-pad target tokens
};

/// §5.4 label smoothing (Szegedy et al., 2016): the target distribution is
/// (1 - epsilon) on the reference token plus epsilon spread uniformly over all V classes, so
/// per token loss = (1 - epsilon) * nll + epsilon * mean_v(-log p_v). Pad targets are ignored.
/// logits: [B, T, V], target: [B, T]
LossSums label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                      int64_t pad_id);

}  // namespace tfm
