#include "model/small_rows_product.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/packed_weight.h"
#include "runtime/capabilities.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// The product of bfloat16 inputs in float64, with the bias and ReLU, as the kernel should round it.
torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, bool relu) {
  auto y = torch::nn::functional::linear(x.to(torch::kDouble), weight.to(torch::kDouble),
                                         bias.defined() ? bias.to(torch::kDouble) : torch::Tensor());
  return relu ? y.relu() : y;
}

// Shapes around the kernel's 64-output blocks (a narrower last block, one block, a single output)
// and every row count it takes; the reference is LibTorch's linear in float64. The kernel sums in
// float32 and rounds once to bfloat16, so it is within one bfloat16 step of the exact value.
TEST(SmallRowsProduct, ComputesTheLinearMapForEveryRowCountAndWidth) {
  torch::manual_seed(5);
  if (!SmallRowsProduct::supported(torch::zeros({2, 2}, torch::kBFloat16))) {
    GTEST_SKIP() << "this CPU has no native bfloat16 (AVX512-BF16): PackedWeight uses oneDNN alone";
  }
  for (const auto& [out, in] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {64, 32}, {65, 256}, {200, 18}, {1000, 64}}) {
    const auto weight = torch::randn({out, in}).to(torch::kBFloat16);
    const auto bias = torch::randn({out}).to(torch::kBFloat16);
    const SmallRowsProduct product(weight);
    for (int64_t rows = 1; rows <= SmallRowsProduct::kMaxRows; rows += (rows < 8 ? 1 : 7)) {
      const auto x = torch::randn({rows, in}).to(torch::kBFloat16);
      for (const bool relu : {false, true}) {
        for (const auto& b : {bias, torch::Tensor()}) {
          const auto expected = reference(x, weight, b, relu);
          const auto got = product.linear(x, b, relu);
          ASSERT_EQ(got.sizes(), expected.sizes());
          ASSERT_EQ(got.scalar_type(), torch::kBFloat16);
          // One bfloat16 step of the result (8 bits), plus float32 summation error.
          const auto tolerance = expected.abs() * (1.0 / 128) + 1e-3;
          const auto error = (got.to(torch::kDouble) - expected).abs();
          EXPECT_TRUE((error <= tolerance).all().item<bool>()) << out << " x " << in << ", " << rows << " rows, relu "
                                                               << relu << ": max error " << error.max().item<double>();
        }
      }
    }
  }
}

// PackedWeight takes it for a few bfloat16 rows and oneDNN beyond: both agree within rounding.
TEST(SmallRowsProduct, PackedWeightAgreesAcrossTheRowCountWhereItChangesKernels) {
  torch::manual_seed(6);
  if (!cpu_has_onednn_bf16()) GTEST_SKIP() << "this CPU has no oneDNN bfloat16 (AVX512 BW/VL/DQ): nothing is packed";
  const auto weight = torch::randn({300, 128}).to(torch::kBFloat16);
  const auto bias = torch::randn({300}).to(torch::kBFloat16);
  const PackedWeight packed(weight);
  const int64_t last = SmallRowsProduct::kMaxRows;
  for (const int64_t rows : {last - 1, last, last + 1, last + 7}) {
    const auto x = torch::randn({rows, 128}).to(torch::kBFloat16);
    const auto expected = reference(x, weight, bias, true);
    const auto got = packed.linear(x, bias, /*relu=*/true).to(torch::kDouble);
    EXPECT_TRUE(((got - expected).abs() <= expected.abs() * (1.0 / 128) + 1e-3).all().item<bool>()) << rows << " rows";
  }
}

// float32: the kernel and oneDNN (which takes more rows) sum in their own orders (oneDNN splits
// long sums), so a step's results move by float32 rounding at most when its row count changes
// kernels. oneDNN's side is the same rows below kMaxRows + 1 zero rows (each output row reads only
// its own input row); the float64 reference bounds both.
TEST(SmallRowsProduct, Float32AgreesWithOneDnnForEveryRowCount) {
  torch::manual_seed(7);
  if (!SmallRowsProduct::supported(torch::zeros({2, 2}))) {
    GTEST_SKIP() << "this CPU has no AVX2 (or the build no LIBXSMM): float32 products stay with oneDNN";
  }
  for (const auto& [out, in] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {65, 256}, {768, 256}, {256, 1024}}) {
    const auto weight = torch::randn({out, in});
    const auto bias = torch::randn({out});
    const SmallRowsProduct product(weight);
    const PackedWeight packed(weight);
    for (int64_t rows = 1; rows <= SmallRowsProduct::kMaxRows; rows += (rows < 8 ? 1 : 7)) {
      const auto x = torch::randn({rows, in});
      const auto beyond = torch::cat({x, torch::zeros({SmallRowsProduct::kMaxRows + 1 - rows, in})});
      for (const bool relu : {false, true}) {
        for (const auto& b : {bias, torch::Tensor()}) {
          const auto got = product.linear(x, b, relu);
          ASSERT_EQ(got.scalar_type(), torch::kFloat32);
          const auto expected = reference(x, weight, b, relu);
          // Sums of up to 1024 products of N(0, 1) values: float32 keeps them within ~1e-4.
          EXPECT_TENSOR_NEAR(got.to(torch::kDouble), expected, 1e-3);
          EXPECT_TENSOR_NEAR(got, packed.linear(beyond, b, relu).narrow(0, 0, rows), 1e-3);
        }
      }
    }
  }
}

// weight [out, in] in oneDNN's AB16b64a (float32) or AB16b64a2b (bfloat16) packed layout, written
// out here from the format's definition: blocks of 16 (32) inputs by 64 outputs, outputs innermost
// (in pairs of inputs for bfloat16), output blocks outermost, zeros where out and in are padded.
torch::Tensor onednn_blocked(const torch::Tensor& weight) {
  const int64_t out = weight.size(0), in = weight.size(1), pair = weight.scalar_type() == torch::kBFloat16 ? 2 : 1;
  const int64_t in_block = 16 * pair, padded_out = (out + 63) / 64 * 64,
                padded_in = (in + in_block - 1) / in_block * in_block;
  auto padded = torch::zeros({padded_out, padded_in}, weight.options());
  padded.narrow(0, 0, out).narrow(1, 0, in).copy_(weight);
  // [A/64, 64, B/(16 pair), 16, pair] -> [A/64, B/(16 pair), 16, 64, pair]
  return padded.view({padded_out / 64, 64, padded_in / in_block, 16, pair})
      .permute({0, 2, 3, 1, 4})
      .contiguous()
      .view(-1);
}

// Given oneDNN's packed copy in the layout it reads, the product reads it in place; given anything
// else (here the same bytes shuffled), it keeps a copy of its own. Both compute the same products.
TEST(SmallRowsProduct, ReadsAPackedCopyInItsLayoutInPlace) {
  torch::manual_seed(8);
  if (!SmallRowsProduct::supported(torch::zeros({2, 2}))) GTEST_SKIP() << "no LIBXSMM kernels on this CPU or build";
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto weight = torch::randn({100, 40}).to(dtype);  // a partial output block, padded inputs
    if (!SmallRowsProduct::supported(weight)) continue;     // bfloat16 without AVX512-BF16
    const auto packed = onednn_blocked(weight);
    const auto shuffled = packed.flip(0);
    const SmallRowsProduct in_place(weight, packed), copied(weight, shuffled), alone(weight);
    EXPECT_TRUE(in_place.reads(packed)) << dtype;
    EXPECT_FALSE(copied.reads(shuffled)) << dtype;
    const auto x = torch::randn({5, 40}).to(dtype);
    const auto bias = torch::randn({100}).to(dtype);
    const auto expected = alone.linear(x, bias, /*relu=*/false);
    EXPECT_TRUE(torch::equal(in_place.linear(x, bias, false), expected)) << dtype;
    EXPECT_TRUE(torch::equal(copied.linear(x, bias, false), expected)) << dtype;
    const double tolerance = dtype == torch::kFloat32 ? 1e-4 : 0.25;
    EXPECT_TENSOR_NEAR(expected.to(torch::kDouble), reference(x, weight, bias, false), tolerance);
  }
}

// blocked_rows() finds each of the weight's elements where the products read it, whether that is
// oneDNN's packed copy (read in place) or the product's own.
TEST(SmallRowsProduct, BlockedRowsFindEveryElementOfTheWeight) {
  torch::manual_seed(10);
  if (!SmallRowsProduct::supported(torch::zeros({2, 2}))) GTEST_SKIP() << "no LIBXSMM kernels on this CPU or build";
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto weight = torch::randn({130, 40}).to(dtype);  // a partial last block, padded inputs
    if (!SmallRowsProduct::supported(weight)) continue;     // bfloat16 without AVX512-BF16
    const auto packed = onednn_blocked(weight);
    for (const auto& given : {packed, torch::Tensor()}) {
      const SmallRowsProduct product(weight, given);
      const BlockedRows rows = product.blocked_rows();
      ASSERT_EQ(rows.rows, 130);
      ASSERT_EQ(rows.dim, 40);
      ASSERT_EQ(rows.dtype, dtype);
      const auto flat = torch::from_blob(const_cast<void*>(rows.data), {rows.offset(129, 39) + 1},
                                         torch::TensorOptions().dtype(dtype));
      auto found = torch::empty_like(weight);
      for (int64_t row = 0; row < 130; ++row) {
        for (int64_t d = 0; d < 40; ++d) found[row][d] = flat[rows.offset(row, d)];
      }
      EXPECT_TRUE(torch::equal(found, weight)) << dtype << (given.defined() ? ", in place" : ", own copy");
    }
  }
}

// A decoding step's projections come as [N, 1, in]: the rows of any leading shape, in that shape.
TEST(SmallRowsProduct, TakesTheRowsOfAnyLeadingShapeAndKeepsIt) {
  torch::manual_seed(9);
  const auto weight = torch::randn({70, 32});
  if (!SmallRowsProduct::supported(weight)) GTEST_SKIP() << "no LIBXSMM kernels on this CPU or build";
  const SmallRowsProduct product(weight);
  const auto bias = torch::randn({70});
  const auto x = torch::randn({4, 1, 32});
  const auto got = product.linear(x, bias, /*relu=*/true);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{4, 1, 70}));
  EXPECT_TRUE(torch::equal(got, product.linear(x.view({4, 32}), bias, true).view({4, 1, 70})));
  const PackedWeight packed(weight);
  EXPECT_TRUE(torch::equal(packed.linear(x, bias, true), got));
  EXPECT_THROW(product.linear(torch::zeros({SmallRowsProduct::kMaxRows + 1, 1, 32}), {}, false), c10::Error);
  EXPECT_THROW(product.linear(torch::zeros({4, 32, 1}), {}, false), c10::Error);  // rows of 1, not of 32
}

TEST(SmallRowsProduct, RefusesWhatItCannotMultiply) {
  EXPECT_FALSE(SmallRowsProduct::supported(torch::zeros({4, 3}, torch::kBFloat16)));  // odd inputs
  EXPECT_FALSE(SmallRowsProduct::supported(torch::zeros({4, 4}, torch::kDouble)));
  EXPECT_FALSE(SmallRowsProduct::supported(torch::zeros({0, 4})));
  if (SmallRowsProduct::supported(torch::zeros({4, 4}))) {
    const SmallRowsProduct product(torch::zeros({4, 4}));
    EXPECT_THROW(product.linear(torch::zeros({2, 4}, torch::kBFloat16), {}, false), c10::Error);  // not its dtype
  }
  if (!SmallRowsProduct::supported(torch::zeros({4, 4}, torch::kBFloat16))) GTEST_SKIP() << "no native bfloat16";
  const SmallRowsProduct product(torch::zeros({4, 4}, torch::kBFloat16));
  EXPECT_THROW(product.linear(torch::zeros({SmallRowsProduct::kMaxRows + 1, 4}, torch::kBFloat16), {}, false),
               c10::Error);
  EXPECT_THROW(product.linear(torch::zeros({2, 6}, torch::kBFloat16), {}, false), c10::Error);
}

}  // namespace
}  // namespace tfm
