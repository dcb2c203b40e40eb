#include "model/bf16_training_linear.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "model/bucketed_rows.h"
#include "runtime/precision.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

struct LinearResults {
  torch::Tensor y, grad_x, grad_weight, grad_bias;
};

/// y = f(x, W, b) under bf16 autocast and the gradients of sum(y * ramp), in float32.
template <typename Linear>
LinearResults run_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                         Linear linear) {
  auto xg = x.clone().requires_grad_(true);
  auto wg = weight.clone().requires_grad_(true);
  auto bg = bias.defined() ? bias.clone().requires_grad_(true) : torch::Tensor();
  torch::Tensor y;
  {
    const AutocastGuard bfloat16(torch::kCPU, Precision::kBFloat16);
    y = linear(xg, wg, bg);
  }
  (y.to(torch::kFloat32) * torch::linspace(-1.0, 1.0, y.numel()).view(y.sizes())).sum().backward();
  return {y.to(torch::kFloat32), xg.grad(), wg.grad(), bg.defined() ? bg.grad() : torch::Tensor()};
}

/// A float64 reference from the same bf16-rounded operands: what the bf16 products approximate.
LinearResults reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto round = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat64); };
  const auto x64 = round(x).reshape({-1, x.size(-1)}), w64 = round(weight);
  auto y = x64.mm(w64.t());
  if (bias.defined()) y = y + round(bias);
  const auto g = round(torch::linspace(-1.0, 1.0, y.numel()).view(y.sizes()).to(torch::kFloat32));
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return {y.view(sizes), g.mm(w64).view(x.sizes()), g.t().mm(x64), bias.defined() ? g.sum(0) : torch::Tensor()};
}

TEST(Bf16TrainingLinear, MatchesAFloat64ReferenceAndAutocastsLinearWithItsGradients) {
  // 3 x 13 = 39 rows are computed as 40 (the padding's output dropped, its gradients zero); 4 x 8
  // rows need no padding; a bias-less layer (the output projection) and a bfloat16 input too.
  torch::manual_seed(5);
  ASSERT_EQ(bucketed_row_count(39), 40);
  ASSERT_EQ(bucketed_row_count(32), 32);
  struct Case {
    std::vector<int64_t> x_sizes;
    bool bias;
    torch::ScalarType x_dtype;
  };
  for (const Case& c : {Case{{3, 13, 48}, true, torch::kFloat32}, Case{{4, 8, 48}, true, torch::kFloat32},
                        Case{{39, 48}, false, torch::kFloat32}, Case{{3, 13, 48}, true, torch::kBFloat16}}) {
    SCOPED_TRACE(::testing::Message() << c.x_sizes.size() << "-d input of " << c.x_sizes[0] << " rows, bias " << c.bias
                                      << ", " << c.x_dtype);
    const auto x = torch::randn(c.x_sizes).to(c.x_dtype);
    const auto weight = torch::randn({24, 48}) * 0.1;
    const auto bias = c.bias ? torch::randn({24}) : torch::Tensor();
    const auto ours = run_linear(x, weight, bias, bf16_training_linear);
    const auto autocast = run_linear(
        x, weight, bias, [](const auto& in, const auto& w, const auto& b) { return torch::linear(in, w, b); });
    const auto exact = reference(x.to(torch::kFloat32), weight, bias);
    ASSERT_EQ(ours.y.sizes(), autocast.y.sizes());
    ASSERT_EQ(ours.grad_x.scalar_type(), c.x_dtype) << "the input's gradient in the input's dtype";
    ASSERT_EQ(ours.grad_weight.scalar_type(), torch::kFloat32);
    // bf16 outputs: within a few bf16 steps of the exact value, as autocast's are.
    const std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs{
        {ours.y, exact.y}, {ours.grad_x, exact.grad_x}, {ours.grad_weight, exact.grad_weight}};
    for (size_t i = 0; i < pairs.size(); ++i) {
      const double scale = pairs[i].second.abs().max().item<double>();
      EXPECT_TENSOR_NEAR(pairs[i].first, pairs[i].second, 0.01 * scale) << "output/gradient " << i;
    }
    EXPECT_TENSOR_NEAR(ours.y, autocast.y, 0.01 * exact.y.abs().max().item<double>());
    EXPECT_TENSOR_NEAR(ours.grad_weight, autocast.grad_weight, 0.01 * exact.grad_weight.abs().max().item<double>());
    if (c.bias) {
      // The bias gradient is summed in float32 from the bf16 gradient rows.
      EXPECT_TENSOR_NEAR(ours.grad_bias, exact.grad_bias, 1e-3 * exact.grad_bias.abs().max().item<double>());
    }
  }
}

TEST(Bf16TrainingLinear, ItsOutputMayBeChangedInPlace) {
  // The padded product's first rows are handed out as a tensor of their own, not an autograd view
  // created in a custom Function, which autograd forbids changing in place.
  const auto x = torch::randn({39, 16}).requires_grad_(true);
  const auto weight = torch::randn({8, 16}).requires_grad_(true);
  const AutocastGuard bfloat16(torch::kCPU, Precision::kBFloat16);
  auto y = bf16_training_linear(x, weight, {});
  EXPECT_NO_THROW(y.mul_(2.0).sum().backward());
  EXPECT_TENSOR_NEAR(weight.grad(), 2 * x.to(torch::kBFloat16).to(torch::kFloat32).sum(0).expand({8, 16}),
                     0.05 * x.sum(0).abs().max().item<double>());
}

}  // namespace
}  // namespace tfm
