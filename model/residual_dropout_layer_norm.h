#pragma once
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

namespace tfm {

/// norm(x + apply_dropout(sublayer, p, training)): post-norm's residual connection while training
/// (§3.1, §5.4). For a float32 residual stream x and a bfloat16 sub-layer output on the CPU (bf16
/// autocast) with fused kernels, rows whose width is a multiple of 16, one pass each way: the
/// forward reads x, the sub-layer and the dropout factors once and writes the output and the sum
/// the backward needs; the backward writes both inputs' gradients and adds to the norm's weight
/// and bias gradients. residual_dropout and LibTorch's LayerNorm took two passes over the sum
/// forward and two more backward.
/// The sum and the dropout are residual_dropout's bits and random stream; the normalization is
/// LayerNorm's formula in float32 with its own order of sums (results within a few roundings of
/// LibTorch's). Elsewhere it is exactly the ops.
/// x, sublayer: one shape [..., D] -> x's shape, in the promoted dtype.
torch::Tensor residual_dropout_layer_norm(torch::nn::LayerNorm& norm, const torch::Tensor& x,
                                          const torch::Tensor& sublayer, double p, bool training);

}  // namespace tfm
