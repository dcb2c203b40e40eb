#include "model/residual_dropout_layer_norm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <vector>

#include "model/dropout.h"
#include "model/layer_norm_rows.h"
#include "model/residual_dropout.h"
#include "runtime/threads.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// A LayerNorm over `width` with weights and biases away from 1 and 0.
torch::nn::LayerNorm affine_norm(int64_t width) {
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({width}));
  torch::NoGradGuard no_grad;
  norm->weight.uniform_(0.5, 1.5);
  norm->bias.uniform_(-0.5, 0.5);
  return norm;
}

struct Results {
  torch::Tensor out, grad_x, grad_sublayer, grad_weight, grad_bias;
};

/// residual_dropout_layer_norm's output and gradients for `upstream`, dropout seeded with `seed`.
Results fused(torch::nn::LayerNorm& norm, const torch::Tensor& x, const torch::Tensor& sublayer,
              const torch::Tensor& upstream, uint64_t seed) {
  norm->zero_grad();
  const auto x_leaf = x.clone().requires_grad_(true);
  const auto sub_leaf = sublayer.clone().requires_grad_(true);
  torch::manual_seed(seed);
  const auto out = residual_dropout_layer_norm(norm, x_leaf, sub_leaf, 0.2, true);
  out.backward(upstream);
  return {out.detach(), x_leaf.grad(), sub_leaf.grad(), norm->weight.grad().clone(), norm->bias.grad().clone()};
}

/// The same from LibTorch's ops: the residual sum in float32 as they compute it (the same
/// dropout draw), then LayerNorm row by row in float64.
Results reference(const torch::nn::LayerNorm& norm, const torch::Tensor& x, const torch::Tensor& sublayer,
                  const torch::Tensor& upstream, uint64_t seed) {
  const auto x_leaf = x.clone().requires_grad_(true);
  const auto sub_leaf = sublayer.clone().requires_grad_(true);
  const auto weight = norm->weight.detach().to(torch::kFloat64).requires_grad_(true);
  const auto bias = norm->bias.detach().to(torch::kFloat64).requires_grad_(true);
  torch::manual_seed(seed);
  const auto sum = (x_leaf + apply_dropout(sub_leaf, 0.2, true)).to(torch::kFloat64);
  const auto mean = sum.mean(-1, true);
  const auto variance = (sum - mean).pow(2).mean(-1, true);
  const auto out = (sum - mean) / (variance + norm->options.eps()).sqrt() * weight + bias;
  out.backward(upstream.to(torch::kFloat64));
  return {out.detach(), x_leaf.grad(), sub_leaf.grad(), weight.grad(), bias.grad()};
}

class ResidualDropoutLayerNormTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = at::get_num_threads();
    set_this_thread_team(2);  // the parallel path, even on one core
  }
  void TearDown() override { set_this_thread_team(previous_); }
  int previous_ = 1;
};

TEST_F(ResidualDropoutLayerNormTest, MatchesTheOpsWithAFloat64NormForwardAndBackward) {
  // [B, T, D] under bf16 autocast: a float32 residual stream, a bfloat16 sub-layer output. Rows
  // in several parts (64 rows each) with a short last one, and a few rows of a narrow width.
  const std::vector<std::vector<int64_t>> shapes{{3, 70, 256}, {1, 3, 32}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE(::testing::Message() << shape[0] << " x " << shape[1] << " x " << shape[2]);
    torch::manual_seed(4);
    auto norm = affine_norm(shape[2]);
    const auto x = torch::randn(shape) * 2 + 0.5;
    const auto sublayer = torch::randn(shape).to(torch::kBFloat16);
    const auto upstream = torch::randn(shape);
    const Results got = fused(norm, x, sublayer, upstream, 21);
    const Results exact = reference(norm, x, sublayer, upstream, 21);
    ASSERT_EQ(got.out.scalar_type(), torch::kFloat32);
    ASSERT_EQ(got.grad_sublayer.scalar_type(), torch::kBFloat16);
    // float32 against float64 over rows of at most 256: a few float roundings.
    EXPECT_TENSOR_NEAR(got.out, exact.out, 2e-5);
    EXPECT_TENSOR_NEAR(got.grad_x, exact.grad_x, 2e-5);
    EXPECT_TENSOR_NEAR(got.grad_weight, exact.grad_weight, 2e-4);
    EXPECT_TENSOR_NEAR(got.grad_bias, exact.grad_bias, 2e-4);
    // bfloat16 rounds twice (the gradient, then its product with the factor): two steps of 2^-8.
    const auto error = (got.grad_sublayer.to(torch::kFloat64) - exact.grad_sublayer.to(torch::kFloat64)).abs();
    EXPECT_TRUE((error <= exact.grad_sublayer.to(torch::kFloat64).abs() * (1.0 / 64) + 1e-6).all().item<bool>());
    const double dropped = got.grad_sublayer.eq(0).to(torch::kFloat64).mean().item<double>();
    EXPECT_NEAR(dropped, 0.2, 0.1) << "the dropped elements get no gradient";
    EXPECT_TRUE(torch::equal(got.grad_sublayer.eq(0), exact.grad_sublayer.eq(0))) << "the same draw as the ops";
  }
}

TEST_F(ResidualDropoutLayerNormTest, TheWeightsGradientsDoNotDependOnTheThreadCount) {
  torch::manual_seed(8);
  auto norm = affine_norm(64);
  const auto x = torch::randn({5, 100, 64});
  const auto sublayer = torch::randn({5, 100, 64}).to(torch::kBFloat16);
  const auto upstream = torch::randn({5, 100, 64});
  const Results two = fused(norm, x, sublayer, upstream, 3);
  set_this_thread_team(1);
  const Results one = fused(norm, x, sublayer, upstream, 3);
  EXPECT_TRUE(torch::equal(one.out, two.out));
  EXPECT_TRUE(torch::equal(one.grad_x, two.grad_x));
  EXPECT_TRUE(torch::equal(one.grad_weight, two.grad_weight));
  EXPECT_TRUE(torch::equal(one.grad_bias, two.grad_bias));
}

TEST_F(ResidualDropoutLayerNormTest, OtherwiseItIsTheOps) {
  torch::manual_seed(5);
  auto norm = affine_norm(24);  // not whole vectors of 16
  const auto x = torch::randn({3, 24});
  const auto sub = torch::randn({3, 24}).to(torch::kBFloat16);
  torch::manual_seed(6);
  const auto got = residual_dropout_layer_norm(norm, x, sub, 0.3, true);
  torch::manual_seed(6);
  EXPECT_TRUE(torch::equal(got, layer_norm_rows(norm, residual_dropout(x, sub, 0.3, true))));
  EXPECT_TRUE(torch::equal(residual_dropout_layer_norm(norm, x, sub, 0.3, false), layer_norm_rows(norm, x + sub)));
}

}  // namespace
}  // namespace tfm
