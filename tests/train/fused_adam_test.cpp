#include "train/fused_adam.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// Two parameter sets with equal values and the same sequence of random gradients.
std::vector<torch::Tensor> make_parameters() {
  torch::manual_seed(11);
  return {torch::randn({7, 5}).requires_grad_(true), torch::randn({5}).requires_grad_(true),
          torch::randn({3, 2, 4}).requires_grad_(true)};
}

void set_gradients(std::vector<torch::Tensor>& parameters, int64_t seed) {
  torch::manual_seed(seed);
  for (auto& p : parameters) p.mutable_grad() = torch::randn_like(p) * 0.1;
}

torch::optim::AdamOptions paper_adam(double lr) { return torch::optim::AdamOptions(lr).betas({0.9, 0.98}).eps(1e-9); }

TEST(FusedAdam, EqualsAdamStepOverSeveralUpdates) {
  auto plain_params = make_parameters();
  auto fused_params = make_parameters();
  torch::optim::Adam plain(plain_params, paper_adam(1e-3));
  torch::optim::Adam fused(fused_params, paper_adam(1e-3));
  for (int64_t step = 1; step <= 5; ++step) {
    set_gradients(plain_params, step);
    set_gradients(fused_params, step);
    if (step == 3) fused_params[1].mutable_grad() = torch::Tensor();  // a parameter without a gradient is skipped
    if (step == 3) plain_params[1].mutable_grad() = torch::Tensor();
    plain.step();
    fused_adam_step(fused);
  }
  for (size_t i = 0; i < plain_params.size(); ++i) EXPECT_TENSOR_NEAR(fused_params[i], plain_params[i], 1e-6);
  // The state is Adam's own: step counts and moments agree, so checkpoints carry it unchanged.
  for (size_t i = 0; i < plain_params.size(); ++i) {
    const auto& a =
        static_cast<torch::optim::AdamParamState&>(*plain.state().at(plain_params[i].unsafeGetTensorImpl()));
    const auto& b =
        static_cast<torch::optim::AdamParamState&>(*fused.state().at(fused_params[i].unsafeGetTensorImpl()));
    EXPECT_EQ(a.step(), b.step());
    EXPECT_TENSOR_NEAR(b.exp_avg(), a.exp_avg(), 1e-7);
    EXPECT_TENSOR_NEAR(b.exp_avg_sq(), a.exp_avg_sq(), 1e-8);
  }
}

TEST(ScaleAndClip, EqualsDivideThenClipGradNorm) {
  for (const double max_norm : {0.0, 0.05, 100.0}) {
    auto reference = make_parameters();
    auto ours = make_parameters();
    set_gradients(reference, 3);
    set_gradients(ours, 3);
    for (auto& p : reference) p.mutable_grad().div_(7.0);
    if (max_norm > 0) torch::nn::utils::clip_grad_norm_(reference, max_norm);
    auto gradients = gradients_of(ours);
    scale_and_clip_gradients(gradients, 1.0 / 7.0, max_norm);
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TENSOR_NEAR(ours[i].grad(), reference[i].grad(), 1e-7) << "max_norm " << max_norm;
    }
  }
}

}  // namespace
}  // namespace tfm
