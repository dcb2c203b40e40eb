#include "model/loss.h"

#include <torch/torch.h>

#include "runtime/kernels.h"

namespace tfm {
namespace {

/// The paper's formula, op by op: log_softmax, gather the reference, mean over the vocabulary.
LossSums plain_loss(const torch::Tensor& logits, const torch::Tensor& target, double epsilon, int64_t pad_id) {
  // Softmax in float32 even under bf16 autocast: log-probabilities of a 30k vocabulary need the range.
  const auto log_probs = torch::log_softmax(logits.to(torch::kFloat32), -1);  // [B, T, V]
  const auto keep = target.ne(pad_id);                                        // [B, T]
  const auto safe_target = target.masked_fill(keep.logical_not(), 0).unsqueeze(-1);
  const auto nll = -log_probs.gather(-1, safe_target).squeeze(-1);  // [B, T]
  const auto uniform = -log_probs.mean(-1);                         // [B, T]
  const auto per_token = (1.0 - epsilon) * nll + epsilon * uniform;
  return {per_token.masked_select(keep).sum(), nll.masked_select(keep).sum().detach()};
}

/// Label-smoothed cross-entropy with a hand-written backward. Per token, with z the logits and
/// lse = log sum_v exp(z_v): nll = lse - z_y and mean_v(-log p_v) = lse - mean_v(z_v); the gradient
/// with respect to z is softmax(z) - ((1 - eps) onehot(y) + eps / V), zero for pad tokens.
class SmoothedCrossEntropy : public torch::autograd::Function<SmoothedCrossEntropy> {
 public:
  /// logits: [N, V] float32, target: [N] -> [loss, nll] (scalars)
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double epsilon, int64_t pad_id) {
    const auto keep = target.ne(pad_id);                                        // [N]
    const auto safe_target = target.masked_fill(keep.logical_not(), 0);         // [N]
    const auto lse = torch::logsumexp(logits, -1);                              // [N]
    const auto chosen = logits.gather(1, safe_target.unsqueeze(1)).squeeze(1);  // [N]
    const auto keep_f = keep.to(logits.scalar_type());
    const auto nll = ((lse - chosen) * keep_f).sum();
    torch::Tensor loss = nll.clone();  // a tensor of its own: the nll output carries no gradient
    if (epsilon > 0) {
      const auto uniform = ((lse - logits.mean(-1)) * keep_f).sum();
      loss = (1.0 - epsilon) * nll + epsilon * uniform;
    }
    ctx->save_for_backward({logits, safe_target, keep_f, lse});
    ctx->saved_data["epsilon"] = epsilon;
    return {loss, nll};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& logits = saved[0];
    const double epsilon = ctx->saved_data["epsilon"].toDouble();
    const int64_t vocab = logits.size(1);
    // Each kept token's row is scaled by the incoming gradient; pad rows get zero.
    const auto row_scale = (saved[2] * grad_outputs[0]).unsqueeze(1);  // [N, 1]
    auto grad = torch::exp(logits - saved[3].unsqueeze(1));            // softmax, [N, V]
    if (epsilon > 0) grad.sub_(epsilon / static_cast<double>(vocab));
    grad.scatter_add_(1, saved[1].unsqueeze(1), torch::full({logits.size(0), 1}, -(1.0 - epsilon), grad.options()));
    grad.mul_(row_scale);
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

LossSums label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                      int64_t pad_id) {
  if (!fused_kernels()) return plain_loss(logits, target, epsilon, pad_id);
  const int64_t vocab = logits.size(-1);
  const auto outputs = SmoothedCrossEntropy::apply(logits.to(torch::kFloat32).reshape({-1, vocab}),
                                                   target.reshape({-1}), epsilon, pad_id);
  return {outputs[0], outputs[1].detach()};
}

}  // namespace tfm
