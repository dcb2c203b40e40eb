#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Summed losses over the non-pad target tokens of a batch. The token count comes from the
/// batch (counted on the host when it was collated), so computing the loss never waits on the device.
struct LossSums {
  torch::Tensor loss;  // label-smoothed cross-entropy (what training minimises), scalar
  torch::Tensor nll;   // plain negative log-likelihood (for perplexity), scalar, no gradient
};

/// §5.4 label smoothing (Szegedy et al., 2016): the target distribution is
/// (1 - epsilon) on the reference token plus epsilon spread uniformly over all V classes, so
/// per token loss = (1 - epsilon) * nll + epsilon * mean_v(-log p_v). Pad targets are ignored.
/// Computed in float32 whatever the logits' dtype. With fused kernels (runtime/kernels.h) the
/// [B*T, V] log-probabilities are never stored: the forward pass keeps one log-sum-exp per token and
/// softmax - target distribution is written directly (on the CPU while training, by the forward
/// pass, each row while it is in cache; else by the backward pass); otherwise the plain
/// log_softmax / gather / mean formula runs.
/// logits: [B, T, V], target: [B, T]
LossSums label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                      int64_t pad_id);

}  // namespace tfm
