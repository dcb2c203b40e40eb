#include "model/dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/PhiloxRNGEngine.h>

#include <mutex>
#include <thread>
#include <vector>

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

TEST(Dropout, ASeedScopeGivesItsThreadItsOwnStream) {
  const auto x = torch::ones({8, 4096});
  std::vector<torch::Tensor> alone;
  {
    const DropoutSeedScope scope(42);
    alone = {apply_dropout(x, 0.3, true), apply_dropout(x, 0.3, true)};
  }
  EXPECT_FALSE(torch::equal(alone[0], alone[1]));  // a stream, not one seed over and over
  // The same seed on another thread, while this one draws from the default generator between
  // its draws: the same masks.
  std::vector<torch::Tensor> beside;
  torch::manual_seed(5);
  std::thread other([&] {
    const DropoutSeedScope scope(42);
    beside.push_back(apply_dropout(x, 0.3, true));
    beside.push_back(apply_dropout(x, 0.3, true));
  });
  for (int i = 0; i < 20; ++i) apply_dropout(x, 0.3, true);
  other.join();
  EXPECT_TRUE(torch::equal(beside[0], alone[0]));
  EXPECT_TRUE(torch::equal(beside[1], alone[1]));
  // A scope leaves the default generator where it was.
  torch::manual_seed(6);
  const auto expected = apply_dropout(x, 0.3, true);
  torch::manual_seed(6);
  {
    const DropoutSeedScope scope(42);
    apply_dropout(x, 0.3, true);
  }
  EXPECT_TRUE(torch::equal(apply_dropout(x, 0.3, true), expected));
}

TEST(Dropout, SeedScopesNest) {
  const auto x = torch::ones({8, 4096});
  torch::Tensor inner, outer_after;
  {
    const DropoutSeedScope scope(1);
    const auto outer_first = apply_dropout(x, 0.3, true);
    {
      const DropoutSeedScope nested(2);
      inner = apply_dropout(x, 0.3, true);
    }
    outer_after = apply_dropout(x, 0.3, true);
  }
  const DropoutSeedScope again(1);
  apply_dropout(x, 0.3, true);
  EXPECT_TRUE(torch::equal(apply_dropout(x, 0.3, true), outer_after));  // the inner scope drew from its own
  const DropoutSeedScope two(2);
  EXPECT_TRUE(torch::equal(apply_dropout(x, 0.3, true), inner));
}

TEST(Dropout, TheMaskIsLibTorchsPhiloxStream) {
  // Block b of 4096 elements reads at::philox_engine(seed, b), 16 bits per element, low half first;
  // the seed is the default generator's next 64 bits.
  const double p = 0.3;
  const auto threshold = static_cast<uint32_t>(p * 65536.0 + 0.5);
  const int64_t n = 3 * 4096 + 777;  // a partial last block, with an odd element count
  torch::manual_seed(13);
  uint64_t seed = 0;
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    seed = generator.get<at::CPUGeneratorImpl>()->random64();
  }
  std::vector<float> expected(n);
  for (int64_t block = 0; block * 4096 < n; ++block) {
    at::philox_engine engine(seed, static_cast<uint64_t>(block), 0);
    for (int64_t i = block * 4096; i < std::min(n, (block + 1) * 4096); i += 2) {
      const uint32_t draw = engine();
      expected[i] = (draw & 0xFFFFU) >= threshold ? 1.0F : 0.0F;
      if (i + 1 < n) expected[i + 1] = (draw >> 16) >= threshold ? 1.0F : 0.0F;
    }
  }
  torch::manual_seed(13);
  const auto kept = apply_dropout(torch::ones({n}), p, true).ne(0).to(torch::kFloat32);
  EXPECT_TRUE(torch::equal(kept, torch::from_blob(expected.data(), {n}, torch::kFloat32)));
}

TEST(Dropout, EveryFloatingTypeDrawsTheSameMask) {
  // bfloat16, half, float and double each write their mask in their own kernel; a partial last
  // block with an odd element count checks the pairs' tail.
  const int64_t n = 2 * 4096 + 333;
  torch::manual_seed(21);
  const auto expected = apply_dropout(torch::ones({n}), 0.15, true);
  for (const auto dtype : {torch::kBFloat16, torch::kHalf, torch::kFloat64}) {
    torch::manual_seed(21);
    const auto mask = apply_dropout(torch::ones({n}, dtype), 0.15, true);
    EXPECT_TRUE(torch::equal(mask.to(torch::kFloat32).ne(0), expected.ne(0))) << dtype;
    EXPECT_TRUE(torch::allclose(mask.to(torch::kFloat32), expected, 1e-2, 0)) << dtype;
  }
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
