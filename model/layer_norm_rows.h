#pragma once
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

namespace tfm {

/// norm(x) for x [..., D]; a CPU tensor of fewer elements than LibTorch's grain for elementwise ops
/// is normalized on the calling thread alone. LibTorch's LayerNorm starts a parallel region for as
/// few as two rows, and for a decoding step's few rows waking another thread costs more than the
/// rows do. Each row is normalized by itself either way, so the bits are norm(x)'s.
torch::Tensor layer_norm_rows(torch::nn::LayerNorm& norm, const torch::Tensor& x);

}  // namespace tfm
