#include "model/teacher_forcing_loss.h"

#include <torch/torch.h>

#include "model/bucketed_rows.h"
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
  auto tokens = targets.ne(pad_id).nonzero().squeeze(1);         // [M]: the positions that hold a token
  auto token_targets = targets.index_select(0, tokens);          // [M]
  if (buckets_product_rows(hidden)) {
    // Rows added to reach a bucketed count repeat position 0 with a pad target: no loss, no gradient.
    const int64_t extra = bucketed_row_count(tokens.size(0)) - tokens.size(0);
    tokens = torch::cat({tokens, torch::zeros({extra}, tokens.options())});
    token_targets = torch::cat({token_targets, torch::full({extra}, pad_id, token_targets.options())});
  }
  const auto logits = model->project(hidden.reshape({-1, hidden.size(-1)}).index_select(0, tokens));  // [M', V]
  return label_smoothed_cross_entropy(logits, token_targets, epsilon, pad_id);
}

}  // namespace tfm
