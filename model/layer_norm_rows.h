#pragma once
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

namespace tfm {

/// norm(x) for x [..., D]; a CPU tensor of fewer elements than LibTorch's grain for elementwise ops
/// is normalized on the calling thread alone. LibTorch's LayerNorm starts a parallel region for as
/// few as two rows, and for a decoding step's few rows waking another thread costs more than the
/// rows do. Each row is normalized by itself either way, so in float32 the bits are norm(x)'s; at
/// inference bfloat16 rows take tfm's own kernel (model/bfloat16_norm.h), whose bits can differ
/// from LibTorch's in the last place.
torch::Tensor layer_norm_rows(torch::nn::LayerNorm& norm, const torch::Tensor& x);

/// norm(x + sublayer) at inference (post-norm's residual, §3.1), written over `sublayer`, a
/// sub-layer's fresh output that nothing else holds: in float32 the bits of layer_norm_rows(norm,
/// x + sublayer) without the sum's and the norm's tensors, the ops around them and, for a decoding
/// step's few rows, a second thread; in bfloat16 one pass, the sum kept in float. Elsewhere
/// (autograd, other devices, mixed dtypes) it is exactly that expression.
torch::Tensor residual_layer_norm_rows(torch::nn::LayerNorm& norm, const torch::Tensor& x, torch::Tensor sublayer);

/// x + sublayer at inference (pre-norm's residual), written over `sublayer` as above; elsewhere
/// x + sublayer.
torch::Tensor residual_sum_rows(const torch::Tensor& x, torch::Tensor sublayer);

}  // namespace tfm
