#include "model/relu_dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/dropout.h"
#include "runtime/kernels.h"

namespace tfm {
namespace {

/// relu then apply_dropout, op by op, from the same seed: output and input gradient.
std::pair<torch::Tensor, torch::Tensor> op_by_op(const torch::Tensor& x, const torch::Tensor& upstream, double p,
                                                 uint64_t seed) {
  torch::manual_seed(seed);
  const auto leaf = x.clone().requires_grad_(true);
  const auto out = apply_dropout(torch::relu(leaf), p, true);
  out.backward(upstream);
  return {out.detach(), leaf.grad()};
}

TEST(ReluDropout, TheSameBitsAsReluThenDropoutForwardAndBackward) {
  // 3 * 32768 + 77 elements: several parallel tasks and a tail shorter than the vector lanes.
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    torch::manual_seed(1);
    const auto x = torch::randn({3 * 32768 + 77}).to(dtype);
    const auto upstream = torch::randn({x.numel()}).to(dtype);
    const auto [expected, expected_grad] = op_by_op(x, upstream, 0.3, 42);
    torch::manual_seed(42);
    const auto leaf = x.clone().requires_grad_(true);
    const auto out = relu_dropout(leaf, 0.3, true);
    out.backward(upstream);
    EXPECT_TRUE(torch::equal(out, expected)) << dtype;
    EXPECT_TRUE(torch::equal(leaf.grad(), expected_grad)) << dtype;
    // Both the relu's zeros and the dropped elements are there.
    const double zeros = out.eq(0).to(torch::kFloat64).mean().item<double>();
    EXPECT_GT(zeros, 0.55);
    EXPECT_LT(zeros, 0.75);
  }
}

TEST(ReluDropout, OutsideTrainingOrWithoutDropoutItIsRelu) {
  const auto x = torch::randn({4, 9});
  EXPECT_TRUE(torch::equal(relu_dropout(x, 0.3, false), torch::relu(x)));
  EXPECT_TRUE(torch::equal(relu_dropout(x, 0.0, true), torch::relu(x)));
}

TEST(ReluDropout, OtherDtypesTakeTheOpByOpPath) {
  const auto x = torch::randn({5, 7}, torch::kFloat64);
  torch::manual_seed(3);
  const auto fused = relu_dropout(x, 0.5, true);
  torch::manual_seed(3);
  EXPECT_TRUE(torch::equal(fused, apply_dropout(torch::relu(x), 0.5, true)));
}

}  // namespace
}  // namespace tfm
