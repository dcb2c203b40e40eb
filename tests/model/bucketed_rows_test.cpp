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

}  // namespace
}  // namespace tfm
