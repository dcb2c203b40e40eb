#include "model/loss.h"

#include <torch/torch.h>

namespace tfm {

LossSums label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                      int64_t pad_id) {
  // Softmax in float32 even under bf16 autocast: log-probabilities of a 30k vocabulary need the range.
  const auto log_probs = torch::log_softmax(logits.to(torch::kFloat32), -1);  // [B, T, V]
  const auto keep = target.ne(pad_id);                                          // [B, T]
  const auto safe_target = target.masked_fill(keep.logical_not(), 0).unsqueeze(-1);
  const auto nll = -log_probs.gather(-1, safe_target).squeeze(-1);              // [B, T]
  const auto uniform = -log_probs.mean(-1);                                     // [B, T]
  const auto per_token = (1.0 - epsilon) * nll + epsilon * uniform;
  LossSums sums;
  sums.loss = per_token.masked_select(keep).sum();
  sums.nll = nll.masked_select(keep).sum().detach();
  sums.tokens = keep.sum().item<int64_t>();
  return sums;
}

}  // namespace tfm
