#include "model/int8_weight.h"

#include <optional>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tfm {
namespace {

/// LibTorch's own dynamic int8 product over the same packed weight, built independently of
/// Int8Weight: per-row int8 weight, input quantized to [0, 127] per call.
torch::Tensor libtorch_linear_dynamic(const torch::Tensor& weight, const torch::Tensor& bias, const torch::Tensor& x) {
  const auto scales = (weight.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kDouble);
  const auto qweight =
      torch::quantize_per_channel(weight, scales, torch::zeros({weight.size(0)}, torch::kLong), 0, torch::kQInt8);
  auto& dispatcher = c10::Dispatcher::singleton();
  torch::jit::Stack stack{qweight, std::optional<torch::Tensor>(bias)};
  dispatcher.findSchemaOrThrow("quantized::linear_prepack", "").callBoxed(&stack);
  const auto& linear_dynamic = dispatcher.findSchemaOrThrow("quantized::linear_dynamic", "");
  // One call per row: each row quantized by its own range.
  const auto rows = x.reshape({-1, x.size(-1)});
  std::vector<torch::Tensor> products;
  for (int64_t i = 0; i < rows.size(0); ++i) {
    torch::jit::Stack product{rows.narrow(0, i, 1).contiguous(), stack[0], /*reduce_range=*/true};
    linear_dynamic.callBoxed(&product);
    products.push_back(product[0].toTensor());
  }
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return torch::cat(products).reshape(sizes);
}

// quantize_rows_int8 gives LibTorch's per-channel quantization bit for bit: random rows, rows
// whose values fall exactly halfway between two steps (rounded to even), rows of zeros, and
// more rows than one block.
TEST(Int8Weight, QuantizesRowsAsLibTorchsPerChannelQuantizer) {
  torch::manual_seed(12);
  auto rows = torch::randn({150, 70});
  // Largest |w| 15.875 = 127 / 8: scale 1/8 exactly, so (k + 1/2) / 8 lies halfway between steps.
  for (const int64_t row : {1, 2}) {
    rows[row] = (torch::arange(70).to(torch::kFloat32) - 34.5F) * 0.125F;
    rows[row][0] = row == 1 ? 15.875F : -15.875F;
  }
  rows[3].zero_();
  rows[4] = torch::randn({70}) * 1e-20F;
  const auto scales = (rows.abs().amax(1) / 127.0).clamp_min(1e-12);  // [150] float32
  const auto expected =
      torch::quantize_per_channel(rows, scales.to(torch::kDouble), torch::zeros({150}, torch::kLong), 0, torch::kQInt8)
          .int_repr();
  const auto got = quantize_rows_int8(rows, scales);
  ASSERT_EQ(got.scalar_type(), torch::kInt8);
  EXPECT_TRUE(torch::equal(got, expected)) << (got != expected).sum().item<int64_t>() << " values differ";
  // The ties are there: row 2's values times its inverse scale lie exactly on halves.
  const auto scaled = rows[2] * scales[2].reciprocal();
  EXPECT_TRUE((scaled - scaled.floor() == 0.5).any().item<bool>());
}

// quantize_int8_rows: each row within half a step of its scale, max |row| / 127, and the sums of
// its values; an Int8Weight keeps exactly these rows when asked to, and none otherwise.
TEST(Int8Weight, RowsAreTheMatrixWithinHalfAStepOfTheirScale) {
  torch::manual_seed(1);
  const auto matrix = torch::randn({50, 64}) * torch::rand({50, 1}) * 3;
  const auto rows = quantize_int8_rows(matrix);
  ASSERT_EQ(rows.values.scalar_type(), torch::kInt8);
  EXPECT_TRUE(torch::allclose(rows.scales, std::get<0>(matrix.abs().max(1)) / 127));
  EXPECT_LE(rows.values.abs().max().item<int>(), 127);
  const auto error = (rows.values.to(torch::kFloat) * rows.scales.unsqueeze(1) - matrix).abs();
  EXPECT_TRUE(error.le(rows.scales.unsqueeze(1) * 0.5001).all().item<bool>());
  EXPECT_TRUE(torch::equal(rows.sums, rows.values.to(torch::kInt).sum(1).to(torch::kInt)));

  const Int8Weight kept(matrix, {}, /*keep_rows=*/true);
  ASSERT_TRUE(kept.rows().defined());
  EXPECT_TRUE(torch::equal(kept.rows().values, rows.values));
  EXPECT_TRUE(torch::equal(kept.rows().scales, rows.scales));
  EXPECT_TRUE(torch::equal(kept.rows().sums, rows.sums));
  EXPECT_FALSE(Int8Weight(matrix, {}).rows().defined());
}

// Blocks of 96 rows and panels of 2048 outputs must give, row by row, the bits of LibTorch's
// product of that row alone: for one row, a few, and several blocks and panels with partial last
// ones; at 1 and 2 threads.
TEST(Int8Weight, GivesEachRowTheBitsOfLibTorchsDynamicProductOfThatRowAlone) {
  torch::manual_seed(11);
  for (const int64_t out : {8000, 96}) {
    const auto weight = torch::randn({out, 64});
    const auto bias = torch::randn({out});
    const Int8Weight int8(weight, bias);
    for (const int64_t rows : {1, 7, 900}) {
      auto x = torch::randn({rows, 64}) * 3.0 + 0.5;
      if (rows == 900) x[rows - 1][63] = 40.0, x[rows - 2][5] = -30.0;  // rows of their own range
      x[0].clamp_min_(0.0);                                             // a ReLU's output: no negatives
      const auto expected = libtorch_linear_dynamic(weight, bias, x);
      for (const int threads : {1, 2}) {
        at::set_num_threads(threads);
        const auto got = int8.linear(x);
        ASSERT_EQ(got.sizes(), expected.sizes());
        EXPECT_TRUE(torch::equal(got, expected)) << out << " outputs, " << rows << " rows, " << threads << " threads";
        // The ReLU taken as rows are dequantized: the bits of a ReLU after the product.
        EXPECT_TRUE(torch::equal(int8.linear(x, /*relu=*/true), expected.relu()))
            << out << " outputs, " << rows << " rows, " << threads << " threads, with ReLU";
      }
    }
  }
  // A row's product does not depend on the rows beside it.
  const Int8Weight int8(torch::randn({300, 64}), torch::randn({300}));
  const auto x = torch::randn({50, 64});
  const auto alone = int8.linear(x.narrow(0, 20, 1));
  auto mates = x.clone();
  mates[3] *= 100.0;  // a batch mate of a much wider range
  EXPECT_TRUE(torch::equal(int8.linear(mates).narrow(0, 20, 1), alone));
  // Leading dimensions are kept.
  const Int8Weight small(torch::randn({5, 8}), torch::randn({5}));
  EXPECT_EQ(small.linear(torch::randn({2, 3, 8})).sizes(), (std::vector<int64_t>{2, 3, 5}));
}

}  // namespace
}  // namespace tfm
