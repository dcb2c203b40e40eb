#include "train/fused_adam.h"

#include <torch/torch.h>

namespace tfm {

void fused_adam_step(torch::optim::Adam& optimizer) {
  torch::NoGradGuard no_grad;
  auto& states = optimizer.state();
  for (auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "fused_adam_step: amsgrad is not used by tfm");
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = states[p.unsafeGetTensorImpl()];
      if (!slot) {  // the state Adam::step() would create on a parameter's first update
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*slot);
      state.step(state.step() + 1);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      // The kernel reads the step count (already advanced, as in PyTorch's fused Adam) from a tensor.
      steps.push_back(torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat32)));
    }
    if (params.empty()) continue;
    const auto [beta1, beta2] = options.betas();
    at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, options.lr(), beta1, beta2,
                     options.weight_decay(), options.eps(), /*amsgrad=*/false, /*maximize=*/false);
  }
}

std::vector<torch::Tensor> gradients_of(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> gradients;
  for (const auto& p : parameters) {
    if (p.grad().defined()) gradients.push_back(p.grad());
  }
  return gradients;
}

void scale_and_clip_gradients(std::vector<torch::Tensor>& gradients, double scale, double max_norm) {
  if (gradients.empty()) return;
  torch::NoGradGuard no_grad;
  if (max_norm <= 0) {
    at::_foreach_mul_(gradients, scale);
    return;
  }
  // |scale * g| = scale * |g|: one factor, computed on the device, applied in one multi-tensor op.
  const auto norms = at::_foreach_norm(gradients, 2);                         // per tensor
  const auto total = torch::stack(norms).to(torch::kFloat32).norm() * scale;  // scalar
  const auto factor = (max_norm / (total + 1e-6)).clamp_max(1.0) * scale;     // scalar
  at::_foreach_mul_(gradients, factor);
}

}  // namespace tfm
