#include "model/teacher_forcing_loss.h"

#include <torch/torch.h>

#include "runtime/kernels.h"

namespace tfm {

LossSums teacher_forcing_loss(Transformer& model, const torch::Tensor& source, const torch::Tensor& target_in,
                              const torch::Tensor& target_out, double epsilon, int64_t pad_id) {
  // On CUDA the row selection would wait for the device (nonzero); there the padding is projected.
  if (!fused_kernels() || !target_out.is_cpu()) {
    return label_smoothed_cross_entropy(model->forward(source, target_in), target_out, epsilon, pad_id);
  }
  const auto hidden = model->decoder_output(source, target_in);  // [B, T, D]
  const auto targets = target_out.reshape({-1});                 // [B*T]
  const auto tokens = targets.ne(pad_id).nonzero().squeeze(1);   // [M]: the positions that hold a token
  const auto logits = model->project(hidden.reshape({-1, hidden.size(-1)}).index_select(0, tokens));  // [M, V]
  return label_smoothed_cross_entropy(logits, targets.index_select(0, tokens), epsilon, pad_id);
}

}  // namespace tfm
