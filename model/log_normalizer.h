#pragma once
#include <torch/types.h>

namespace tfm {

/// Whether log_normalizers() computes for these logits: CPU, float32 or bfloat16, 2-d.
bool log_normalizers_supported(const torch::Tensor& logits);

/// The log-softmax's normalizer of each row, log sum_v exp(logits[n, v]), computed in float32
/// whatever the logits' dtype, so that log-probabilities logits - normalizer can be formed where
/// they are read (beam search's top-k) instead of written out as an [N, V] float32 tensor.
/// logits: [N, V] float32 or bfloat16 on the CPU -> [N] float32. A row of -inf gives -inf.
torch::Tensor log_normalizers(const torch::Tensor& logits);

}  // namespace tfm
