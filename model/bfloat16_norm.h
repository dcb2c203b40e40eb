#pragma once
#include <torch/types.h>

namespace tfm {

/// Whether bfloat16_layer_norm() computes for these: CPU bfloat16 rows [..., N], contiguous, N a
/// multiple of 16, and weight and bias [N] bfloat16, contiguous.
bool bfloat16_layer_norm_fits(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

/// LayerNorm of bfloat16 rows in float, rounded once: out = (v - mean) / sqrt(var + eps) x weight
/// + bias, with v = x, or x + added (undefined: x alone) summed in float and never rounded. Mean
/// and variance are two passes over v, each summed in 16 lanes and then across them in one stated
/// order, so every CPU gives the same bits (LibTorch's bfloat16 kernel, a Welford cascade on AVX2,
/// can differ from them in the last place). out: x's shape, contiguous; may be x or added.
void bfloat16_layer_norm(const torch::Tensor& x, const torch::Tensor& added, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps, torch::Tensor& out);

/// sublayer = x + sublayer, both bfloat16 [..., N] contiguous of one shape, N a multiple of 16: each
/// sum in float rounded to nearest even, LibTorch's add's bits, in one pass.
void bfloat16_add_into(const torch::Tensor& x, torch::Tensor& sublayer);

}  // namespace tfm
