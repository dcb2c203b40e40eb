#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Whether layer_norm_kernel() can run here: an x86-64 build (where LibTorch's CPU kernels are
/// compiled per instruction set and its dispatch stub has the layout this build declares).
bool layer_norm_kernel_available();

/// LibTorch's own CPU LayerNorm kernel (the one native_layer_norm runs, so the same bits) without
/// the op around it: no dispatcher and no output, mean and 1/sigma tensors allocated per call, which
/// at a decoding step's few rows cost four times the normalization itself.
/// x: [..., N] rows, contiguous; weight, bias: [N] contiguous, x's dtype (float32 or bfloat16);
/// out: x's shape and dtype, contiguous, and may be x itself (each row is read whole before it is
/// written). Needs layer_norm_kernel_available().
void layer_norm_kernel(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                       torch::Tensor& out);

}  // namespace tfm
