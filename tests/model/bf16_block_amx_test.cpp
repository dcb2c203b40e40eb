#include "model/bf16_block_amx.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace tfm {
namespace {

constexpr int64_t kBlock = 64;  // outputs in a block of SmallRowsProduct's layout

/// weight [64, in] in SmallRowsProduct's bfloat16 block layout: [in / 2, 64, 2].
torch::Tensor lay_out_block(const torch::Tensor& weight) {
  const int64_t in = weight.size(1);
  return weight.view({kBlock, in / 2, 2}).permute({1, 0, 2}).contiguous();
}

// Every tile row count, one group and several, over one tile's 32 inputs and many; the reference
// is the product in float64. The kernel sums in float32, so each output is within float32
// summation error of the exact sum: a few units of 2^-24 of the sum of the products' magnitudes for
// each input summed. Rows past the groups' are left as they were.
TEST(Bf16BlockAmx, MultipliesEachGroupOfRowsByTheBlock) {
  if (!bf16_block_amx_kernels()) {
    GTEST_SKIP() << "this CPU has no AMX-BF16 tiles (or Linux withholds them): LIBXSMM's kernels take these products";
  }
  torch::manual_seed(81);
  for (const int64_t in : {32, 96, 512, 2048}) {
    const auto weight = torch::randn({kBlock, in}).to(torch::kBFloat16);
    const auto block = lay_out_block(weight);
    for (const int64_t group_rows : {1, 3, 4, 16}) {
      for (const int64_t groups : {1, 2, 4}) {
        const int64_t rows = groups * group_rows;
        const auto x = torch::randn({rows, in}).to(torch::kBFloat16);
        std::vector<float> acc(static_cast<size_t>((rows + 1) * kBlock), -7.0F);  // one row more, untouched
        {
          const Bf16Tiles tiles(group_rows);
          multiply_bf16_block_amx(block.data_ptr<c10::BFloat16>(), x.data_ptr<c10::BFloat16>(), in, groups, group_rows,
                                  acc.data());
        }
        const auto got = torch::from_blob(acc.data(), {rows + 1, kBlock}, torch::kFloat32).to(torch::kDouble);
        const auto xd = x.to(torch::kDouble), wd = weight.to(torch::kDouble);
        const auto exact = xd.matmul(wd.t());                  // [rows, 64]
        const auto magnitude = xd.abs().matmul(wd.abs().t());  // [rows, 64]
        const auto error = (got.narrow(0, 0, rows) - exact).abs();
        EXPECT_TRUE((error <= magnitude * (static_cast<double>(in) * 0x1p-24) + 1e-30).all().item<bool>())
            << in << " inputs, " << groups << " x " << group_rows << " rows: max error " << error.max().item<double>();
        EXPECT_TRUE((got[rows] == -7.0).all().item<bool>()) << in << " inputs, " << rows << " rows";
      }
    }
  }
}

TEST(Bf16BlockAmx, RefusesWhatItCannotMultiply) {
  if (!bf16_block_amx_kernels()) {
    EXPECT_THROW(Bf16Tiles tiles(4), c10::Error);  // no tiles here to set
    return;
  }
  EXPECT_THROW(Bf16Tiles tiles(0), c10::Error);
  EXPECT_THROW(Bf16Tiles tiles(kTileRows + 1), c10::Error);
  const Bf16Tiles tiles(2);
  std::vector<c10::BFloat16> block(static_cast<size_t>(48 * kBlock)), x(2 * 48);
  std::vector<float> acc(2 * kBlock);
  EXPECT_THROW(multiply_bf16_block_amx(block.data(), x.data(), 48, 1, 2, acc.data()), c10::Error);  // not 32s
}

}  // namespace
}  // namespace tfm
