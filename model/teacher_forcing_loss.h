#pragma once
#include <cstdint>

#include <torch/types.h>

#include "model/loss.h"
#include "model/transformer.h"

namespace tfm {

/// A batch's training loss: teacher forcing through `model`, then the label-smoothed
/// cross-entropy (model/loss.h) over the target positions that hold a token. With fused kernels
/// on the CPU, the output layer (the largest product, [rows, V] each way) and the loss run over
/// those positions only: padding's logits were computed and then given zero gradient. Elsewhere
/// every position is projected, as the paper's operations do.
/// source: [B, S], target_in, target_out: [B, T]
LossSums teacher_forcing_loss(Transformer& model, const torch::Tensor& source, const torch::Tensor& target_in,
                              const torch::Tensor& target_out, double epsilon, int64_t pad_id);

}  // namespace tfm
