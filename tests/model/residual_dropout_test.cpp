#include "model/residual_dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/dropout.h"

namespace tfm {
namespace {

TEST(ResidualDropout, TheSameBitsAsDropoutThenAddForwardAndBackward) {
  // A float32 residual stream and a bfloat16 sub-layer output, as under bf16 autocast; several
  // parallel tasks and a tail shorter than the vector lanes.
  torch::manual_seed(2);
  const int64_t n = 2 * 32768 + 45;
  const auto x = torch::randn({n});
  const auto sub = torch::randn({n}).to(torch::kBFloat16);
  const auto upstream = torch::randn({n});

  torch::manual_seed(77);
  const auto x_ops = x.clone().requires_grad_(true);
  const auto sub_ops = sub.clone().requires_grad_(true);
  const auto expected = x_ops + apply_dropout(sub_ops, 0.2, true);
  expected.backward(upstream);

  torch::manual_seed(77);
  const auto x_fused = x.clone().requires_grad_(true);
  const auto sub_fused = sub.clone().requires_grad_(true);
  const auto got = residual_dropout(x_fused, sub_fused, 0.2, true);
  got.backward(upstream);

  ASSERT_EQ(got.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(got, expected));
  EXPECT_TRUE(torch::equal(x_fused.grad(), x_ops.grad()));
  EXPECT_TRUE(torch::equal(sub_fused.grad(), sub_ops.grad()));
  // Some of the sub-layer's elements were dropped: their gradient is 0.
  const double dropped = sub_fused.grad().eq(0).to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(dropped, 0.15);
  EXPECT_LT(dropped, 0.25);
}

TEST(ResidualDropout, OtherwiseItIsTheOps) {
  torch::manual_seed(5);
  const auto x = torch::randn({3, 8});
  const auto sub = torch::randn({3, 8});
  EXPECT_TRUE(torch::equal(residual_dropout(x, sub, 0.3, false), x + sub));
  torch::manual_seed(6);
  const auto fused = residual_dropout(x, sub, 0.3, true);  // float32 both: the ops
  torch::manual_seed(6);
  EXPECT_TRUE(torch::equal(fused, x + apply_dropout(sub, 0.3, true)));
}

}  // namespace
}  // namespace tfm
