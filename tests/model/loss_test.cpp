#include "model/loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

class LossKernels : public testing::BothKernelsTest {};
INSTANTIATE_BOTH_KERNELS(LossKernels);

TEST_P(LossKernels, LabelSmoothingEqualsLibTorchCrossEntropy) {
  for (const double epsilon : {0.1, 0.0}) {
    torch::manual_seed(9);
    const auto logits = torch::randn({2, 5, 11}, torch::requires_grad());
    auto target = torch::randint(4, 11, {2, 5}, torch::kLong);
    target.index_put_({1, torch::indexing::Slice(3)}, kPadId);
    const auto ours = label_smoothed_cross_entropy(logits, target, epsilon, kPadId);
    namespace F = torch::nn::functional;
    const auto reference = F::cross_entropy(
        logits.view({-1, 11}), target.view({-1}),
        F::CrossEntropyFuncOptions().label_smoothing(epsilon).ignore_index(kPadId).reduction(torch::kSum));
    EXPECT_TENSOR_NEAR(ours.loss, reference, 1e-5);
    const auto nll = F::cross_entropy(logits.view({-1, 11}), target.view({-1}),
                                      F::CrossEntropyFuncOptions().ignore_index(kPadId).reduction(torch::kSum));
    EXPECT_TENSOR_NEAR(ours.nll, nll, 1e-5);
    // Gradients agree too, also for an upstream gradient other than 1.
    const auto ours_grad = torch::autograd::grad({ours.loss * 0.5}, {logits})[0];
    const auto reference_grad = torch::autograd::grad({reference * 0.5}, {logits})[0];
    EXPECT_TENSOR_NEAR(ours_grad, reference_grad, 1e-6);
    EXPECT_EQ(ours_grad[1][4].abs().sum().item<double>(), 0.0) << "a pad target gets no gradient";
    // And for the upstream gradient of 1 that a loss's backward() passes.
    const auto again = label_smoothed_cross_entropy(logits, target, epsilon, kPadId);
    EXPECT_TENSOR_NEAR(torch::autograd::grad({again.loss}, {logits})[0], reference_grad * 2.0, 1e-6);
  }
}

TEST_P(LossKernels, LossOfBfloat16LogitsIsComputedInFloat32) {
  torch::manual_seed(3);
  const auto logits = torch::randn({3, 4, 50});
  const auto target = torch::randint(4, 50, {3, 4}, torch::kLong);
  const auto full = label_smoothed_cross_entropy(logits, target, 0.1, kPadId);
  const auto half = label_smoothed_cross_entropy(logits.to(torch::kBFloat16), target, 0.1, kPadId);
  EXPECT_EQ(half.loss.scalar_type(), torch::kFloat32);
  EXPECT_NEAR(half.loss.item<double>(), full.loss.item<double>(), 0.05 * full.loss.item<double>());
}

}  // namespace
}  // namespace tfm
