#include "model/bf16_weight_copies.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <vector>

#include "model/bf16_training_linear.h"
#include "runtime/precision.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

TEST(Bf16WeightCopies, MakesACopyOnceAndAgainWhenTheWeightChanges) {
  const auto weight = torch::randn({6, 4}).requires_grad_(true);
  Bf16WeightCopies copies;
  const auto first = copies.get(weight);
  EXPECT_EQ(first.scalar_type(), torch::kBFloat16);
  EXPECT_FALSE(first.requires_grad());
  EXPECT_TENSOR_NEAR(first, weight.to(torch::kBFloat16), 0.0);
  EXPECT_TRUE(copies.get(weight).is_same(first)) << "a second call shares the first copy";
  {
    torch::NoGradGuard no_grad;
    weight.add_(1.0);  // as an optimizer step does: the version counter moves
  }
  const auto second = copies.get(weight);
  EXPECT_FALSE(second.is_same(first));
  EXPECT_TENSOR_NEAR(second, weight.to(torch::kBFloat16), 0.0);
  copies.clear();
  EXPECT_FALSE(copies.get(weight).is_same(second));
}

TEST(Bf16WeightCopies, TheLinearLayerTakesItsWeightFromTheCopiesInUse) {
  // A copy changed behind the weight's back shows which one the product read.
  const auto x = torch::randn({5, 4});
  const auto weight = torch::randn({3, 4}).requires_grad_(true);
  const auto bias = torch::randn({3}).requires_grad_(true);
  Bf16WeightCopies copies;
  copies.get(weight).zero_();
  const AutocastGuard bfloat16(torch::kCPU, Precision::kBFloat16);
  const auto without = bf16_training_linear(x, weight, bias);
  EXPECT_GT(without.sub(bias.to(torch::kBFloat16)).abs().max().item<double>(), 0.01);
  std::vector<torch::Tensor> from_threads(2);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < from_threads.size(); ++t) {
    threads.emplace_back([&, t] {
      const AutocastGuard thread_bfloat16(torch::kCPU, Precision::kBFloat16);  // autocast is per thread
      const UseBf16WeightCopies use(copies);
      from_threads[t] = bf16_training_linear(x, weight, bias);
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& y : from_threads) EXPECT_TENSOR_NEAR(y, bias.to(torch::kBFloat16).expand({5, 3}), 0.0);
  EXPECT_EQ(UseBf16WeightCopies::current(), nullptr) << "only the threads that asked used them";
}

}  // namespace
}  // namespace tfm
