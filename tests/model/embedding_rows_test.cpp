#include "model/embedding_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "model/embeddings.h"
#include "runtime/kernels.h"
#include "tests/model/model_test_support.h"

namespace tfm {
namespace {

/// LibTorch's ops as TokenAndPosition ran them before embed_rows: tokens(ids) * scale, plus the
/// positions' rows cast to the table's dtype.
torch::Tensor libtorch_embedding(const torch::Tensor& table, const torch::Tensor& ids, double scale,
                                 const torch::Tensor& positions, const std::vector<int64_t>& rows) {
  const auto placed = positions.index_select(0, torch::tensor(rows, torch::kLong)).view({ids.size(0), ids.size(1), -1});
  return torch::embedding(table, ids) * scale + placed.to(table.scalar_type());
}

/// A [V, D] table of values whose products with sqrt(D) and sums with positions round in every
/// bit of a bfloat16 or float32.
torch::Tensor random_table(int64_t vocabulary, int64_t dim, torch::ScalarType dtype, uint64_t seed) {
  torch::manual_seed(seed);
  return (torch::randn({vocabulary, dim}) * 0.37).to(dtype);
}

TEST(EmbedRows, HasTheBitsOfLibTorchsOpsInEveryDtype) {
  torch::NoGradGuard no_grad;
  const int64_t vocabulary = 50, dim = 48;
  const double scale = std::sqrt(static_cast<double>(dim));
  const auto ids = torch::randint(0, vocabulary, {3, 5}, torch::kLong);
  const std::vector<int64_t> rows = {0, 1, 2, 3, 4, 7, 6, 5, 4, 3, 9, 9, 0, 2, 8};
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto table = random_table(vocabulary, dim, dtype, 1);
    for (const auto position_dtype : {torch::kFloat32, dtype}) {
      const auto positions = random_table(10, dim, position_dtype, 2);
      const auto expected = libtorch_embedding(table, ids, scale, positions, rows);
      const auto got = embed_rows(table, ids, scale, positions, rows);
      ASSERT_EQ(got.sizes(), expected.sizes());
      EXPECT_EQ(got.scalar_type(), dtype);
      EXPECT_TRUE(torch::equal(got, expected)) << dtype << " table, " << position_dtype << " positions";
    }
  }
}

/// `table` [V, D] laid out as BlockedRows describes, blocks of 64 rows and D padded to 16 * pair
/// with garbage (the padding is never read): an independent copy of the layout, element by element.
BlockedRows lay_out_by_hand(const torch::Tensor& table, int64_t pair) {
  const int64_t rows = table.size(0), dim = table.size(1), block = 64;
  const int64_t padded_dim = (dim + 16 * pair - 1) / (16 * pair) * (16 * pair);
  const int64_t blocks = (rows + block - 1) / block;
  auto laid = torch::full({blocks * block * padded_dim}, 1e30, table.options());
  auto flat = table.contiguous().view({-1});
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t d = 0; d < dim; ++d) {
      // block, then pairs of inputs, then the block's row, then the input within its pair
      const int64_t at =
          (row / block) * block * padded_dim + (d / pair) * (block * pair) + (row % block) * pair + d % pair;
      laid[at] = flat[row * dim + d];
    }
  }
  return {laid, laid.data_ptr(), table.scalar_type(), rows, dim, padded_dim, block, pair, /*scales=*/{}};
}

TEST(EmbedRows, RowsReadFromAPackedLayoutHaveTheTablesBits) {
  torch::NoGradGuard no_grad;
  const int64_t vocabulary = 150, dim = 40;  // a last block of 22 rows; dim padded to 48 or 64
  const double scale = std::sqrt(static_cast<double>(dim));
  const auto ids = torch::tensor(std::vector<int64_t>{0, 63, 64, 149, 127, 128, 5, 100}).view({2, 4});
  const std::vector<int64_t> rows = {0, 1, 2, 3, 3, 2, 1, 0};
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto table = random_table(vocabulary, dim, dtype, 5);
    const auto blocked = lay_out_by_hand(table, dtype == torch::kBFloat16 ? 2 : 1);
    const auto positions = random_table(4, dim, torch::kFloat32, 6);
    const auto expected = embed_rows(table, ids, scale, positions, rows);
    ASSERT_TRUE(embed_rows_fit(blocked, ids, positions));
    const auto got = embed_rows(blocked, ids, scale, positions, rows);
    ASSERT_EQ(got.sizes(), expected.sizes());
    EXPECT_TRUE(torch::equal(got, expected)) << dtype;
  }
  const auto table = random_table(vocabulary, dim, torch::kFloat32, 7);
  const auto positions = random_table(4, dim, torch::kFloat32, 8);
  EXPECT_THROW(embed_rows(lay_out_by_hand(table, 1), torch::tensor(std::vector<int64_t>{150}).view({1, 1}), scale,
                          positions, {0}),
               c10::IndexError);
}

// int8 rows (an int8 model's output matrix, Int8Weight::rows()) embed as the float32 matrix they
// stand for: each value times its row's factor, computed here by LibTorch's ops.
TEST(EmbedRows, Int8RowsHaveTheBitsOfTheirDequantizedMatrix) {
  torch::NoGradGuard no_grad;
  const int64_t vocabulary = 70, dim = 40;
  const double scale = std::sqrt(static_cast<double>(dim));
  torch::manual_seed(9);
  const auto values = torch::randint(-127, 128, {vocabulary, dim}, torch::kLong).to(torch::kInt8);
  const auto factors = torch::rand({vocabulary}) * 0.01 + 1e-4;  // [V] float32
  const BlockedRows int8{values, values.data_ptr(), torch::kChar, vocabulary, dim, dim, 1, 1, factors};
  const auto dequantized = values.to(torch::kFloat32) * factors.unsqueeze(1);  // [V, D]
  const auto ids = torch::tensor(std::vector<int64_t>{0, 69, 5, 33, 12, 33}).view({2, 3});
  const std::vector<int64_t> rows = {0, 1, 2, 2, 1, 0};
  const auto positions = random_table(3, dim, torch::kFloat32, 10);
  ASSERT_TRUE(embed_rows_fit(int8, ids, positions));
  const auto got = embed_rows(int8, ids, scale, positions, rows);
  EXPECT_EQ(got.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(got, libtorch_embedding(dequantized, ids, scale, positions, rows)));
  EXPECT_THROW(embed_rows(int8, torch::tensor(std::vector<int64_t>{70}).view({1, 1}), scale, positions, {0}),
               c10::IndexError);
  // Without a factor for every row, or laid out in blocks, they are not read.
  BlockedRows unscaled = int8;
  unscaled.scales = factors.narrow(0, 0, vocabulary - 1);
  EXPECT_FALSE(embed_rows_fit(unscaled, ids, positions));
  BlockedRows blocked = int8;
  blocked.block = 64;
  EXPECT_FALSE(embed_rows_fit(blocked, ids, positions));
}

TEST(EmbedRows, AnIdOutsideTheTableIsAnIndexError) {
  torch::NoGradGuard no_grad;
  const auto table = random_table(7, 16, torch::kFloat32, 3);
  const auto positions = random_table(2, 16, torch::kFloat32, 4);
  for (const int64_t bad : {int64_t{7}, int64_t{-1}}) {
    const auto ids = torch::tensor({{int64_t{1}, bad}}, torch::kLong);
    EXPECT_THROW(embed_rows(table, ids, 4.0, positions, {0, 1}), c10::IndexError) << bad;
  }
}

TEST(EmbedRows, PlainKernelsAndTrainingKeepLibTorchsOps) {
  const auto table = random_table(7, 16, torch::kFloat32, 5);
  const auto positions = random_table(2, 16, torch::kFloat32, 6);
  const auto ids = torch::tensor({{int64_t{1}, int64_t{2}}}, torch::kLong);
  {
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(embed_rows_fit(table, ids, positions));
    set_fused_kernels(false);
    EXPECT_FALSE(embed_rows_fit(table, ids, positions));
    set_fused_kernels(true);
  }
  EXPECT_FALSE(embed_rows_fit(table.clone().requires_grad_(), ids, positions));  // training differentiates it
}

// TokenAndPosition at inference takes embed_rows; the plain path is LibTorch's ops. Both must give
// the same bits, at a step's later positions and at rows of positions of their own.
TEST(EmbedRows, TokenAndPositionGivesThePlainPathsBits) {
  for (auto config : testing::decoding_variants()) {
    config.vocab_size = 40;
    config.d_model = 32;
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      torch::manual_seed(7);
      TokenAndPosition embedding(config, make_token_embedding(config.vocab_size, config.d_model));
      embedding->to(dtype);
      embedding->eval();
      torch::NoGradGuard no_grad;
      const auto ids = torch::randint(1, config.vocab_size, {3, 4}, torch::kLong);
      const auto step_ids = ids.narrow(1, 0, 1).contiguous();
      const std::vector<int64_t> row_positions = {5, 2, 9};
      const auto fused = embedding->forward(ids, 3);
      const auto fused_at = embedding->forward_at(step_ids, row_positions);
      set_fused_kernels(false);
      const auto plain = embedding->forward(ids, 3);
      const auto plain_at = embedding->forward_at(step_ids, row_positions);
      set_fused_kernels(true);
      EXPECT_TRUE(torch::equal(fused, plain)) << dtype;
      EXPECT_TRUE(torch::equal(fused_at, plain_at)) << dtype;
      EXPECT_EQ(fused.sizes(), (std::vector<int64_t>{3, 4, config.d_model}));
    }
  }
}

}  // namespace
}  // namespace tfm
