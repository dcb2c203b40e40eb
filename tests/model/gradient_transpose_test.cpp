#include "model/gradient_transpose.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

TEST(GradientTranspose, PadsTransposesAndSumsColumnsAsATenDoes) {
  torch::manual_seed(3);
  // (rows, padded, out): full 32 x 32 blocks, a partial last column block, padding that crosses a
  // block, a single value, and rows that need no padding at all.
  const std::vector<std::vector<int64_t>> shapes{{64, 64, 96}, {39, 40, 24}, {100, 104, 1000},
                                                 {1, 1, 1},    {33, 34, 77}, {70, 70, 33}};
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0], padded = shape[1], out = shape[2];
    const auto g = torch::randn({rows, out}).to(torch::kBFloat16);
    const auto expected_rows = torch::cat({g, torch::zeros({padded - rows, out}, g.options())});  // [padded, out]
    const PaddedGradient result = pad_and_transpose_gradient(g, padded, /*column_sums=*/true);
    SCOPED_TRACE(::testing::Message() << rows << " rows padded to " << padded << ", " << out << " columns");
    EXPECT_TENSOR_NEAR(result.rows, expected_rows, 0.0);
    // Unit columns; rows whole 64-byte lines apart, an odd number of them (never a multiple of 4 KiB).
    EXPECT_EQ(result.transposed.stride(1), 1);
    EXPECT_EQ(result.transposed.stride(0) * 2 % 64, 0);
    EXPECT_EQ(result.transposed.stride(0) * 2 / 64 % 2, 1);
    EXPECT_GE(result.transposed.stride(0), padded);
    EXPECT_TENSOR_NEAR(result.transposed, expected_rows.t(), 0.0);
    ASSERT_EQ(result.column_sums.scalar_type(), torch::kFloat32);
    // Float sums of at most 100 values near 1 in two orders: far below one bf16 step.
    EXPECT_TENSOR_NEAR(result.column_sums, g.to(torch::kFloat64).sum(0), 1e-4);
    if (padded == rows) {
      EXPECT_TRUE(result.rows.is_same(g)) << "nothing to add: g itself";
    }
  }
}

TEST(GradientTranspose, SkipsTheSumsUnlessAsked) {
  const auto g = torch::ones({5, 7}).to(torch::kBFloat16);
  const PaddedGradient result = pad_and_transpose_gradient(g, 8, /*column_sums=*/false);
  EXPECT_FALSE(result.column_sums.defined());
  EXPECT_TENSOR_NEAR(result.transposed.narrow(1, 5, 3), torch::zeros({7, 3}), 0.0);
}

}  // namespace
}  // namespace tfm
