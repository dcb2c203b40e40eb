#include "model/loss.h"

#include <torch/torch.h>

#include "model/cross_entropy_rows.h"
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

/// Per-row log-sum-exp, target logit and mean logit: on the CPU one read of the logits in their
/// own dtype (model/cross_entropy_rows.h); elsewhere LibTorch ops over a float32 copy.
CrossEntropyRows rows_of(const torch::Tensor& logits, const torch::Tensor& target) {
  if (cross_entropy_rows_supported(logits)) return cross_entropy_rows(logits, target);
  const auto z = logits.to(torch::kFloat32);
  return {torch::logsumexp(z, -1), z.gather(1, target.unsqueeze(1)).squeeze(1), z.mean(-1)};
}

torch::Tensor gradient_of(const torch::Tensor& logits, const torch::Tensor& target, const torch::Tensor& lse,
                          const torch::Tensor& row_scale, double epsilon) {
  if (cross_entropy_rows_supported(logits)) return cross_entropy_gradient(logits, target, lse, row_scale, epsilon);
  const auto z = logits.to(torch::kFloat32);
  auto grad = torch::exp(z - lse.unsqueeze(1));  // softmax, [N, V]
  if (epsilon > 0) grad.sub_(epsilon / static_cast<double>(z.size(1)));
  grad.scatter_add_(1, target.unsqueeze(1), torch::full({z.size(0), 1}, -(1.0 - epsilon), grad.options()));
  return grad.mul_(row_scale.unsqueeze(1)).to(logits.scalar_type());
}

/// Label-smoothed cross-entropy with a hand-written backward. Per token, with z the logits and
/// lse = log sum_v exp(z_v): nll = lse - z_y and mean_v(-log p_v) = lse - mean_v(z_v); the gradient
/// with respect to z is softmax(z) - ((1 - eps) onehot(y) + eps / V), zero for pad tokens. Both
/// passes compute in float32 and keep the logits in their own dtype (bfloat16 under autocast), so
/// the only [N, V] tensor written is the gradient.
class SmoothedCrossEntropy : public torch::autograd::Function<SmoothedCrossEntropy> {
 public:
  /// logits: [N, V] float32 or bfloat16, target: [N] -> [loss, nll] (float32 scalars)
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double epsilon, int64_t pad_id) {
    const auto keep = target.ne(pad_id);                                 // [N]
    const auto safe_target = target.masked_fill(keep.logical_not(), 0);  // [N]
    const auto keep_f = keep.to(torch::kFloat32);
    // Training on the CPU: the gradient for an incoming gradient of 1 (what a loss's backward()
    // passes) is written now, with each row still in cache; the logits need not be kept.
    torch::Tensor gradient;
    const CrossEntropyRows rows = logits.requires_grad() && cross_entropy_rows_supported(logits)
                                      ? cross_entropy_rows_and_gradient(logits, safe_target, keep_f, epsilon, gradient)
                                      : rows_of(logits, safe_target);
    const auto nll = ((rows.log_normalizer - rows.target_logit) * keep_f).sum();
    torch::Tensor loss = nll.clone();  // a tensor of its own: the nll output carries no gradient
    if (epsilon > 0) {
      const auto uniform = ((rows.log_normalizer - rows.mean_logit) * keep_f).sum();
      loss = (1.0 - epsilon) * nll + epsilon * uniform;
    }
    if (gradient.defined()) {
      ctx->save_for_backward({gradient});
    } else {
      ctx->save_for_backward({logits, safe_target, keep_f, rows.log_normalizer});
    }
    ctx->saved_data["epsilon"] = epsilon;
    return {loss, nll};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    if (saved.size() == 1) {  // written by the forward pass for an incoming gradient of 1
      const auto& gradient = saved[0];
      const auto& incoming = grad_outputs[0];
      if (incoming.item<double>() == 1.0) return {gradient, torch::Tensor(), torch::Tensor(), torch::Tensor()};
      // Any other incoming gradient scales it (rounded a second time in bfloat16).
      const auto scaled = (gradient.to(torch::kFloat32) * incoming.to(torch::kFloat32)).to(gradient.scalar_type());
      return {scaled, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    // Each kept token's row is scaled by the incoming gradient; pad rows get zero.
    const auto row_scale = saved[2] * grad_outputs[0].to(torch::kFloat32);  // [N]
    const auto grad = gradient_of(saved[0], saved[1], saved[3], row_scale, ctx->saved_data["epsilon"].toDouble());
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

LossSums label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                      int64_t pad_id) {
  if (!fused_kernels()) return plain_loss(logits, target, epsilon, pad_id);
  const int64_t vocab = logits.size(-1);
  const auto outputs = SmoothedCrossEntropy::apply(logits.reshape({-1, vocab}), target.reshape({-1}), epsilon, pad_id);
  return {outputs[0], outputs[1].detach()};
}

}  // namespace tfm
