#pragma once
#include <torch/types.h>

namespace tfm {

/// Whether attention_softmax() takes these: CPU bfloat16 scores [B, H, T, S] and a bool mask
/// broadcastable to them, or none.
bool attention_softmax_supported(const torch::Tensor& scores, const torch::Tensor& mask);

/// Training's attention weights in one pass over the scores and one over their gradient:
/// apply_dropout(attention_weights(scale * scores, mask), dropout, training), with the same
/// random stream, where the op-by-op form took five passes each way (the scale, the mask, the
/// softmax, the fill of keyless rows, dropout). Keys where the mask is false get weight 0, and a
/// query with no key all 0. The softmax is computed in float32. Differentiable in scores.
/// scores: [B, H, T, S] bfloat16, mask: bool broadcastable to [B, H, T, S] or undefined
/// -> [B, H, T, S] bfloat16
torch::Tensor attention_softmax(const torch::Tensor& scores, const torch::Tensor& mask, double scale, double dropout,
                                bool training);

}  // namespace tfm
