#include "model/live_inputs_product.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "model/bf16_block_amx.h"
#include "model/small_rows_product.h"

namespace tfm {
namespace {

/// x [rows, in] in `dtype` with about two thirds of its columns zero in every row (a ReLU's
/// output at a beam's rows), some of them -0, and scattered zeros in the other columns.
torch::Tensor relu_like_rows(int64_t rows, int64_t in, torch::ScalarType dtype) {
  auto x = torch::randn({rows, in}).relu();
  const auto dead = torch::rand({1, in}) < 2.0 / 3.0;
  x = x.masked_fill(dead, 0.0);
  x.select(1, 0).fill_(-0.0);  // the sign bit alone: still zero
  return x.to(dtype);
}

/// The columns (float32) or column pairs (bfloat16) of x not zero in some row, by brute force.
std::vector<int32_t> live_by_brute_force(const torch::Tensor& x, int64_t group) {
  const auto nonzero = x.to(torch::kFloat32).ne(0.0).any(0);  // [in]
  std::vector<int32_t> live;
  for (int64_t unit = 0; unit < x.size(1) / group; ++unit) {
    if (nonzero.narrow(0, unit * group, group).any().item<bool>()) live.push_back(static_cast<int32_t>(unit));
  }
  return live;
}

TEST(LiveInputs, FindsTheInputsNotZeroInSomeRow) {
  torch::manual_seed(11);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const bool bfloat16 = dtype == torch::kBFloat16;
    if (bfloat16 && !live_inputs_kernels(true)) continue;  // float32's are found on any CPU
    for (const int64_t in : {2, 16, 18, 46, 256, 1030}) {  // whole vectors and tails
      for (int64_t rows = 1; rows <= kLiveInputsMaxRows; ++rows) {
        const auto x = relu_like_rows(rows, in, dtype);
        std::vector<int32_t> live;
        if (bfloat16) {
          find_live_inputs(x.data_ptr<c10::BFloat16>(), rows, in, live);
        } else {
          find_live_inputs(x.data_ptr<float>(), rows, in, live);
        }
        EXPECT_EQ(live, live_by_brute_force(x, bfloat16 ? 2 : 1)) << dtype << ", " << rows << " x " << in;
      }
    }
  }
}

// SmallRowsProduct skips the dead inputs of its whole 64-output blocks at up to kLiveInputsMaxRows
// rows; a row with every input live makes it sum all of them through LIBXSMM. Each row's whole
// blocks come out in the same bits either way (a narrower last block is LIBXSMM's in both, whose
// bits there depend on the row count), and every output is the exact product within float32
// summation error (bfloat16: one rounding of the result).
TEST(LiveInputs, SkippingDeadInputsGivesLibxsmmsBits) {
  torch::manual_seed(12);
  bool ran = false;
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    if (!live_inputs_kernels(dtype == torch::kBFloat16)) continue;
    // On AMX tiles bfloat16 products sum every input (model/bf16_block_amx.h): nothing to compare.
    if (dtype == torch::kBFloat16 && bf16_block_amx_kernels()) continue;
    for (const auto& [out, in] : std::vector<std::pair<int64_t, int64_t>>{
             {64, 1024}, {70, 512}, {200, 46}, {130, 272}, {256, 1024}, {512, 2048}, {192, 40}}) {
      const auto weight = torch::randn({out, in}).to(dtype);
      const auto bias = torch::randn({out}).to(dtype);
      if (!SmallRowsProduct::supported(weight)) continue;
      const SmallRowsProduct product(weight);
      for (int64_t rows = 1; rows <= kLiveInputsMaxRows; ++rows) {
        const auto x = relu_like_rows(rows, in, dtype);
        const auto dense_row = torch::randn({1, in}).to(dtype);
        for (const bool relu : {false, true}) {
          const auto skipped = product.linear(x, bias, relu);
          const auto all = product.linear(torch::cat({x, dense_row}), bias, relu).narrow(0, 0, rows);
          const int64_t whole = out / 64 * 64;
          EXPECT_TRUE(torch::equal(skipped.narrow(1, 0, whole), all.narrow(1, 0, whole)))
              << dtype << ", " << out << " x " << in << ", " << rows << " rows";
          auto exact =
              torch::nn::functional::linear(x.to(torch::kDouble), weight.to(torch::kDouble), bias.to(torch::kDouble));
          if (relu) exact = exact.relu();
          const double step = dtype == torch::kBFloat16 ? 1.0 / 128 : 1e-5;
          const auto error = (skipped.to(torch::kDouble) - exact).abs();
          EXPECT_TRUE((error <= exact.abs() * step + 1e-3).all().item<bool>())
              << dtype << ", " << out << " x " << in << ": max error " << error.max().item<double>();
          ran = true;
        }
      }
    }
  }
  if (!ran) GTEST_SKIP() << "this CPU or build has no AVX-512 kernels (or no LIBXSMM): products sum every input";
}

}  // namespace
}  // namespace tfm
