#pragma once
#include <torch/types.h>

namespace tfm {

/// x + apply_dropout(sublayer, p, training): a residual connection (§5.4). For a float32 residual
/// stream x and a bfloat16 sub-layer output on the CPU while training (bf16 autocast), one pass
/// each way where the three ops took three forward (dropout, the cast to float, the add) and two
/// backward; the same bits as the ops, and the same random stream. x, sublayer: one shape -> x's
/// shape, in the promoted dtype.
torch::Tensor residual_dropout(const torch::Tensor& x, const torch::Tensor& sublayer, double p, bool training);

}  // namespace tfm
