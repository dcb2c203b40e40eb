#include "model/layer_norm_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <cmath>

#include "model/layer_norm_kernel.h"
#include "runtime/threads.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// LayerNorm row by row in float64 with the module's weight and bias: x [N, D] -> [N, D].
torch::Tensor naive_layer_norm(const torch::Tensor& x, const torch::nn::LayerNorm& norm) {
  const auto rows = x.to(torch::kFloat64);
  const auto mean = rows.mean(-1, true);
  const auto variance = (rows - mean).pow(2).mean(-1, true);
  const double eps = norm->options.eps();
  return (rows - mean) / (variance + eps).sqrt() * norm->weight.to(torch::kFloat64) + norm->bias.to(torch::kFloat64);
}

class LayerNormRows : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  void SetUp() override {
    previous_ = at::get_num_threads();
    set_this_thread_team(2);  // the parallel path, even on one core
  }
  void TearDown() override { set_this_thread_team(previous_); }
  /// A LayerNorm over 256 with weights and biases away from 1 and 0, in the test's dtype.
  torch::nn::LayerNorm affine_norm() const {
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({256}));
    torch::NoGradGuard no_grad;
    norm->weight.uniform_(0.5, 1.5);
    norm->bias.uniform_(-0.5, 0.5);
    norm->to(GetParam());
    return norm;
  }
  int previous_ = 1;
};

/// Whether every element of `got` (bfloat16) lies within one bfloat16 step (2^-7 relative) of the
/// exact `expected` (float64): rounded once, from a computation in float.
bool within_one_bfloat16_step(const torch::Tensor& got, const torch::Tensor& expected) {
  const auto error = (got.to(torch::kFloat64) - expected).abs();
  const auto step = expected.abs().clamp_min(1e-3) * std::ldexp(1.0, -7);
  return (error <= step).all().item<bool>();
}

// float32: the module's own bits. bfloat16: tfm's kernel, one rounding from the exact norm.
TEST_P(LayerNormRows, GivesTheModulesBitsFewRowsAndMany) {
  torch::manual_seed(7);
  auto norm = affine_norm();
  torch::NoGradGuard no_grad;
  // 4 rows: a beam's decoding step, under the grain; 200 rows: over it.
  for (const int64_t rows : {4, 200}) {
    const auto x = (torch::randn({rows, 256}) * 3 + 1).to(GetParam());
    const auto actual = layer_norm_rows(norm, x);
    const auto exact = naive_layer_norm(x.to(torch::kFloat64), norm);
    if (GetParam() == torch::kFloat32) {
      EXPECT_TRUE(torch::equal(actual, norm(x))) << rows << " rows";
      EXPECT_TENSOR_NEAR(actual, exact.to(GetParam()), 1e-5);
    } else {
      EXPECT_TRUE(within_one_bfloat16_step(actual, exact)) << rows << " rows";
    }
    EXPECT_EQ(at::get_num_threads(), 2) << "the calling thread's team is restored";
  }
}

// At inference the residual's sum and norm are written over the sub-layer's output: in float32
// the bits of the two ops, in bfloat16 one rounding from the exact norm of the unrounded sum; for a
// step's few rows and for many. The pre-norm sum alone keeps the op's bits in both.
TEST_P(LayerNormRows, ResidualSumAndNormGiveTheOpsBitsOverTheSublayersOutput) {
  torch::manual_seed(8);
  auto norm = affine_norm();
  torch::NoGradGuard no_grad;
  for (const int64_t rows : {4, 200}) {
    const auto x = (torch::randn({rows, 1, 256}) * 2).to(GetParam());
    const auto sublayer = torch::randn({rows, 1, 256}).to(GetParam());
    auto written = sublayer.clone();
    const auto got = residual_layer_norm_rows(norm, x, written);
    if (GetParam() == torch::kFloat32) {
      EXPECT_TRUE(torch::equal(got, norm(x + sublayer))) << rows << " rows";
    } else {
      const auto exact =
          naive_layer_norm((x.to(torch::kFloat64) + sublayer.to(torch::kFloat64)).view({rows, 256}), norm);
      EXPECT_TRUE(within_one_bfloat16_step(got.view({rows, 256}), exact)) << rows << " rows";
    }
    if (layer_norm_kernel_available()) {
      EXPECT_TRUE(got.is_same(written)) << "written over the sub-layer's output";
    }
    auto summed = sublayer.clone();
    const auto sum = residual_sum_rows(x, summed);
    EXPECT_TRUE(torch::equal(sum, x + sublayer)) << rows << " rows";
    EXPECT_TRUE(sum.is_same(summed));
    EXPECT_EQ(at::get_num_threads(), 2) << "the calling thread's team is restored";
  }
}

// Where a gradient is wanted, the residual is the ops themselves, and nothing is overwritten.
TEST(LayerNormRowsTraining, ResidualUnderAutogradIsTheOpsAndLeavesItsInputs) {
  torch::manual_seed(9);
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({16}));
  const auto x = torch::randn({3, 16}, torch::requires_grad());
  const auto sublayer = torch::randn({3, 16});
  const auto kept = sublayer.clone();
  residual_layer_norm_rows(norm, x, sublayer).sum().backward();
  EXPECT_TRUE(torch::equal(sublayer, kept));
  const auto x2 = x.detach().clone().requires_grad_();
  norm(x2 + sublayer).sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), x2.grad()));
  EXPECT_TRUE(residual_sum_rows(x, sublayer).requires_grad());
  EXPECT_TRUE(torch::equal(sublayer, kept));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormRows, ::testing::Values(torch::kFloat32, torch::kBFloat16));

}  // namespace
}  // namespace tfm
