#include "model/bucketed_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <vector>

#include "runtime/precision.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

TEST(BucketedRows, RoundsUpToSixteenCountsPerDoubling) {
  const std::vector<int64_t> rows{1, 32, 33, 64, 65, 100, 1024, 1025, 1800, 2000, 2049, 25000};
  const std::vector<int64_t> bucketed{1, 32, 34, 64, 68, 100, 1024, 1088, 1856, 2048, 2176, 25600};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(bucketed_row_count(rows[i]), bucketed[i]) << rows[i];
  std::set<int64_t> counts_in_one_doubling;
  for (int64_t m = 1; m <= 100000; ++m) {
    const int64_t padded = bucketed_row_count(m);
    ASSERT_GE(padded, m);
    ASSERT_LT((padded - m) * 16, std::max<int64_t>(m, 1)) << m;  // fewer than m / 16 rows added
    if (m > 1024 && m <= 2048) counts_in_one_doubling.insert(padded);
  }
  EXPECT_EQ(counts_in_one_doubling.size(), 16U);
}

TEST(BucketedRows, OnlyUnderBFloat16AutocastOnTheCpu) {
  const auto x = torch::randn({4, 8});
  EXPECT_FALSE(buckets_product_rows(x));
  {
    const AutocastGuard float32(torch::kCPU, Precision::kFloat32);
    EXPECT_FALSE(buckets_product_rows(x));
  }
  {
    const AutocastGuard bfloat16(torch::kCPU, Precision::kBFloat16);
    EXPECT_TRUE(buckets_product_rows(x));
  }
  EXPECT_FALSE(buckets_product_rows(x)) << "the guard's end turns it off again";
}

TEST(BucketedRows, LinearOverBucketedRowsMatchesLinearWithItsGradients) {
  // 3 x 13 = 39 rows are computed as 40: the padding row's output must be dropped, the others kept
  // in place, and the gradients must be those of the 39 rows.
  torch::manual_seed(5);
  const auto x = torch::randn({3, 13, 48});
  const auto weight = torch::randn({24, 48}) * 0.1;
  const auto bias = torch::randn({24});
  ASSERT_EQ(bucketed_row_count(39), 40);
  const AutocastGuard bfloat16(torch::kCPU, Precision::kBFloat16);
  auto run = [&](bool bucketed) {
    auto xg = x.clone().requires_grad_(true);
    auto wg = weight.clone().requires_grad_(true);
    auto bg = bias.clone().requires_grad_(true);
    const auto y = bucketed ? linear_over_bucketed_rows(xg, wg, bg) : torch::linear(xg, wg, bg);
    (y.to(torch::kFloat32) * torch::linspace(-1.0, 1.0, y.numel()).view(y.sizes())).sum().backward();
    return std::vector<torch::Tensor>{y.to(torch::kFloat32), xg.grad(), wg.grad(), bg.grad()};
  };
  const auto bucketed = run(true);
  const auto plain = run(false);
  ASSERT_EQ(bucketed[0].sizes(), plain[0].sizes());
  EXPECT_TENSOR_NEAR(bucketed[0], plain[0], 0.0);  // each output row reads only its own input row
  for (size_t i = 1; i < plain.size(); ++i) {
    EXPECT_TENSOR_NEAR(bucketed[i], plain[i], 0.02 * plain[i].abs().max().item<double>()) << "gradient " << i;
  }
}

}  // namespace
}  // namespace tfm
