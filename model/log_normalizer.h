#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Whether log_normalizers() computes for these logits: CPU, float32 or bfloat16, 2-d.
bool log_normalizers_supported(const torch::Tensor& logits);

/// Cells per block of LogNormalizers::block_maxima.
constexpr int64_t kLogitBlock = 256;
/// Blocks of kLogitBlock in a row of `width` logits, the last one partial.
constexpr int64_t logit_blocks(int64_t width) { return (width + kLogitBlock - 1) / kLogitBlock; }

struct LogNormalizers {
  torch::Tensor normalizers;   // [N] float32
  torch::Tensor block_maxima;  // [N, ceil(V / kLogitBlock)] float32: the largest logit of each block of a row
};

/// The log-softmax's normalizer of each row, log sum_v exp(logits[n, v]), computed in float32
/// whatever the logits' dtype, so that log-probabilities logits - normalizer can be formed where
/// they are read (beam search's top-k) instead of written out as an [N, V] float32 tensor. The
/// maxima of the rows' blocks come free with it: a top-k skips the blocks they rule out.
/// logits: [N, V] float32 or bfloat16 on the CPU. A row of -inf gives -inf.
LogNormalizers log_normalizers(const torch::Tensor& logits);

}  // namespace tfm
