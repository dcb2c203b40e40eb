#include "model/dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include "runtime/kernels.h"

namespace tfm {
namespace {

TEST(Dropout, DropsAboutPAndScalesTheRestExactly) {
  torch::manual_seed(1);
  const double p = 0.1;
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto x = torch::ones({300, 1001}, dtype);  // not a multiple of the block size
    const auto y = apply_dropout(x, p, /*training=*/true);
    const auto dropped = y.eq(0);
    const double rate = dropped.to(torch::kDouble).mean().item<double>();
    // 300,300 draws: the rate's standard deviation is 0.00055.
    EXPECT_NEAR(rate, p, 0.003);
    const auto kept = y.masked_select(dropped.logical_not());
    const auto scale = torch::tensor(1.0 / (1.0 - p)).to(dtype);  // rounded as the dtype rounds it
    EXPECT_TRUE(kept.eq(scale).all().item<bool>());
  }
}

TEST(Dropout, IsTheIdentityOutsideTrainingAndAtZero) {
  const auto x = torch::randn({4, 5});
  EXPECT_TRUE(apply_dropout(x, 0.3, /*training=*/false).is_same(x));
  EXPECT_TRUE(apply_dropout(x, 0.0, /*training=*/true).is_same(x));
}

TEST(Dropout, RepeatsUnderOneSeedAndNotAcrossCalls) {
  const auto x = torch::ones({64, 4096});
  torch::manual_seed(7);
  const auto first = apply_dropout(x, 0.5, true);
  const auto second = apply_dropout(x, 0.5, true);
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(apply_dropout(x, 0.5, true), first));
  EXPECT_FALSE(torch::equal(first, second));
}

TEST(Dropout, TheMaskDoesNotDependOnTheThreadCount) {
  const auto x = torch::ones({50, 4096});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  torch::manual_seed(9);
  const auto one = apply_dropout(x, 0.2, true);
  at::set_num_threads(2);
  torch::manual_seed(9);
  const auto two = apply_dropout(x, 0.2, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, two));
}

TEST(Dropout, GradientIsTheSameMask) {
  torch::manual_seed(3);
  const auto x = torch::randn({20, 300}).requires_grad_(true);
  const auto y = apply_dropout(x, 0.25, true);
  y.sum().backward();
  // y = x * noise, so dy/dx = noise = y / x wherever x != 0.
  EXPECT_TRUE(torch::allclose(x.grad(), y.detach() / x.detach(), 1e-5, 1e-6));
}

TEST(Dropout, PlainKernelsUseLibTorchsOwnDropout) {
  const auto x = torch::ones({40, 500});
  set_fused_kernels(false);
  torch::manual_seed(5);
  const auto ours = apply_dropout(x, 0.1, true);
  torch::manual_seed(5);
  const auto libtorch = torch::dropout(x, 0.1, true);
  set_fused_kernels(true);
  EXPECT_TRUE(torch::equal(ours, libtorch));
}

}  // namespace
}  // namespace tfm
