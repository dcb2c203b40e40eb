#pragma once
#include <torch/types.h>

namespace tfm {

/// Whether the kernels below take these logits: CPU, [N, V], float32 or bfloat16.
bool cross_entropy_rows_supported(const torch::Tensor& logits);

/// What the label-smoothed cross-entropy needs of each row z of the logits, computed in float32
/// from the logits as they are (bfloat16 logits are not copied to float32 first).
struct CrossEntropyRows {
  torch::Tensor log_normalizer;  // log sum_v e^z_v, [N] float32
  torch::Tensor target_logit;    // z_target, [N] float32
  torch::Tensor mean_logit;      // mean_v z_v, [N] float32
};

/// logits: [N, V] float32 or bfloat16, target: [N] int64 in [0, V)
CrossEntropyRows cross_entropy_rows(const torch::Tensor& logits, const torch::Tensor& target);

/// The loss's gradient with respect to the logits, written once in their dtype:
///   row_scale[n] * (softmax(z_n) - (1 - epsilon) onehot(target_n) - epsilon / V),
/// with softmax(z_n) = e^(z_n - log_normalizer[n]); rows with row_scale 0 (pads) are zero.
/// logits: [N, V], target: [N] int64, log_normalizer and row_scale: [N] float32 -> [N, V]
torch::Tensor cross_entropy_gradient(const torch::Tensor& logits, const torch::Tensor& target,
                                     const torch::Tensor& log_normalizer, const torch::Tensor& row_scale,
                                     double epsilon);

/// cross_entropy_rows() and cross_entropy_gradient() at once: each row's gradient is written
/// right after its reductions, while the row is still in cache, so the logits are read from memory
/// once instead of once each way, and from the exponentials the normalizer summed (one per logit
/// instead of two). The reductions' bits; the gradient's to within a float rounding or two before
/// it is rounded to the logits' dtype.
/// -> the reductions; `gradient` becomes [N, V] in the logits' dtype.
CrossEntropyRows cross_entropy_rows_and_gradient(const torch::Tensor& logits, const torch::Tensor& target,
                                                 const torch::Tensor& row_scale, double epsilon,
                                                 torch::Tensor& gradient);

}  // namespace tfm
