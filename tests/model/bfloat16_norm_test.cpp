#include "model/bfloat16_norm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "runtime/threads.h"

namespace tfm {
namespace {

/// (v - mean) / sqrt(var + eps) x weight + bias per row of v [N, D], in float64.
torch::Tensor exact_layer_norm(const torch::Tensor& v, const torch::Tensor& weight, const torch::Tensor& bias,
                               double eps) {
  const auto rows = v.to(torch::kFloat64);
  const auto mean = rows.mean(-1, true);
  const auto variance = (rows - mean).pow(2).mean(-1, true);
  return (rows - mean) / (variance + eps).sqrt() * weight.to(torch::kFloat64) + bias.to(torch::kFloat64);
}

/// The largest error of bfloat16 `got` against float64 `exact`, in bfloat16 steps (2^-7 relative).
double steps_off(const torch::Tensor& got, const torch::Tensor& exact) {
  const auto step = exact.abs().clamp_min(1e-3) * std::ldexp(1.0, -7);
  return ((got.to(torch::kFloat64) - exact).abs() / step).max().item<double>();
}

// Against float64 from the same bfloat16 inputs: one rounding off at most, x alone and x + added
// (the sum unrounded), written apart or over either input, at 1 and 2 threads (300 rows: several
// tasks), the same bits whatever the threads.
TEST(BFloat16LayerNorm, RoundsTheExactNormOnceAloneOrOverASum) {
  torch::manual_seed(4);
  const auto weight = torch::empty({512}).uniform_(0.5, 1.5).to(torch::kBFloat16);
  const auto bias = torch::empty({512}).uniform_(-0.5, 0.5).to(torch::kBFloat16);
  const auto x = (torch::randn({300, 512}) * 3 + 1).to(torch::kBFloat16);
  const auto added = torch::randn({300, 512}).to(torch::kBFloat16);
  const double eps = 1e-5;
  const int before = at::get_num_threads();
  torch::Tensor first;
  for (const int threads : {1, 2}) {
    set_this_thread_team(threads);
    auto alone = torch::empty_like(x);
    bfloat16_layer_norm(x, {}, weight, bias, eps, alone);
    EXPECT_LE(steps_off(alone, exact_layer_norm(x, weight, bias, eps)), 1.0) << threads << " threads";
    auto summed = torch::empty_like(x);
    bfloat16_layer_norm(x, added, weight, bias, eps, summed);
    const auto exact_sum = x.to(torch::kFloat64) + added.to(torch::kFloat64);
    EXPECT_LE(steps_off(summed, exact_layer_norm(exact_sum, weight, bias, eps)), 1.0) << threads << " threads";
    auto over_added = added.clone();
    bfloat16_layer_norm(x, over_added, weight, bias, eps, over_added);
    EXPECT_TRUE(torch::equal(over_added, summed));
    auto over_x = x.clone();
    bfloat16_layer_norm(over_x, added, weight, bias, eps, over_x);
    EXPECT_TRUE(torch::equal(over_x, summed));
    if (!first.defined()) first = summed;
    EXPECT_TRUE(torch::equal(summed, first)) << "the same bits at " << threads << " threads";
  }
  set_this_thread_team(before);
}

TEST(BFloat16LayerNorm, FitsOnlyBFloat16RowsOfWholeVectors) {
  const auto weight = torch::ones({48}, torch::kBFloat16), bias = torch::zeros({48}, torch::kBFloat16);
  EXPECT_TRUE(bfloat16_layer_norm_fits(torch::zeros({2, 48}, torch::kBFloat16), weight, bias));
  EXPECT_FALSE(bfloat16_layer_norm_fits(torch::zeros({2, 48}), weight, bias));
  EXPECT_FALSE(bfloat16_layer_norm_fits(torch::zeros({2, 40}, torch::kBFloat16), weight.narrow(0, 0, 40),
                                        bias.narrow(0, 0, 40)));
  EXPECT_FALSE(bfloat16_layer_norm_fits(torch::zeros({48, 2}, torch::kBFloat16).t(), weight, bias));
}

// The residual's sum: LibTorch's add's bits (each sum in float, rounded to nearest even).
TEST(BFloat16AddInto, GivesLibTorchsAddsBits) {
  torch::manual_seed(5);
  const auto x = (torch::randn({257, 64}) * 100).to(torch::kBFloat16);
  const auto sublayer = torch::randn({257, 64}).to(torch::kBFloat16);
  auto sums = sublayer.clone();
  bfloat16_add_into(x, sums);
  EXPECT_TRUE(torch::equal(sums, x + sublayer));
}

}  // namespace
}  // namespace tfm
