#include "model/float_block_avx2.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/small_rows_product.h"

namespace tfm {
namespace {

constexpr int64_t kBlock = 64;  // outputs in a block of SmallRowsProduct's layout

/// acc [rows, 64] of x [rows, in] times block [in, 64] over the inputs in `summed`, each output
/// summed in their order with one std::fma each from zero: the order the kernel promises, computed
/// a scalar at a time.
std::vector<float> fma_in_order(const float* block, const float* x, int64_t rows, int64_t in,
                                const std::vector<int32_t>& summed) {
  std::vector<float> acc(static_cast<size_t>(rows * kBlock), 0.0F);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < kBlock; ++c) {
      float sum = 0.0F;
      for (const int32_t k : summed) sum = std::fma(x[r * in + k], block[k * kBlock + c], sum);
      acc[static_cast<size_t>(r * kBlock + c)] = sum;
    }
  }
  return acc;
}

std::vector<int32_t> all_inputs(int64_t in) {
  std::vector<int32_t> inputs(static_cast<size_t>(in));
  for (int64_t k = 0; k < in; ++k) inputs[static_cast<size_t>(k)] = static_cast<int32_t>(k);
  return inputs;
}

/// About a third of [0, in), ascending, at least one.
std::vector<int32_t> some_inputs(int64_t in) {
  std::vector<int32_t> inputs;
  const auto keep = torch::rand({in}) < 1.0 / 3.0;
  for (int64_t k = 0; k < in; ++k) {
    if (keep[k].item<bool>() || (k == in - 1 && inputs.empty())) inputs.push_back(static_cast<int32_t>(k));
  }
  return inputs;
}

// Every row count the kernel takes, over all inputs and over a list of them, with and without a
// next block to read ahead, over input counts from one to more than a block's slices fill a page.
// A kernel that sums in another order (in reverse, in two partial sums, as a tree) differs in the
// last bits of some of these outputs, and a row or strip written to the wrong place, or a listed
// input missed, differs in many.
TEST(FloatBlockAvx2, SumsEachOutputsInputsInOrderWithOneFusedMultiplyAddEach) {
  if (!float_block_avx2_kernels()) GTEST_SKIP() << "this CPU has AVX-512 (or no AVX2 and FMA): LIBXSMM takes these";
  torch::manual_seed(31);
  for (const int64_t in : {1, 3, 17, 256, 1030}) {
    const auto blocks = torch::randn({2, in, kBlock});  // this block and the next, [in, 64] each
    const float* block = blocks.data_ptr<float>();
    const float* next = block + in * kBlock;
    const auto listed = some_inputs(in);
    for (int64_t rows = 1; rows <= kFloatBlockMaxRows; ++rows) {
      const auto x = torch::randn({rows, in}) * 3.0;
      const auto every = fma_in_order(block, x.data_ptr<float>(), rows, in, all_inputs(in));
      const auto some = fma_in_order(block, x.data_ptr<float>(), rows, in, listed);
      for (const float* ahead : {next, static_cast<const float*>(nullptr)}) {
        const std::string where = std::to_string(rows) + " rows x " + std::to_string(in) + " inputs, " +
                                  (ahead != nullptr ? "reading ahead" : "last block");
        std::vector<float> acc(every.size(), std::nanf(""));
        multiply_float_block(block, ahead, ahead == nullptr, x.data_ptr<float>(), rows, in, nullptr, in, acc.data());
        EXPECT_EQ(std::memcmp(acc.data(), every.data(), acc.size() * sizeof(float)), 0) << where;
        std::fill(acc.begin(), acc.end(), std::nanf(""));
        multiply_float_block(block, ahead, ahead == nullptr, x.data_ptr<float>(), rows, in, listed.data(),
                             static_cast<int64_t>(listed.size()), acc.data());
        EXPECT_EQ(std::memcmp(acc.data(), some.data(), acc.size() * sizeof(float)), 0) << where << ", listed";
      }
    }
  }
  const auto x = torch::ones({kFloatBlockMaxRows + 1, 4});
  std::vector<float> acc(static_cast<size_t>((kFloatBlockMaxRows + 1) * kBlock));
  EXPECT_THROW(multiply_float_block(torch::ones({4, kBlock}).data_ptr<float>(), nullptr, true, x.data_ptr<float>(),
                                    kFloatBlockMaxRows + 1, 4, nullptr, 4, acc.data()),
               c10::Error);
}

// SmallRowsProduct takes the kernel for its whole blocks at up to kFloatBlockMaxRows rows: each
// output is the in-order fused sum, plus the bias, through the ReLU, in float32. With two thirds
// of the inputs zero in every row (a ReLU's output) it sums only the others, in the same bits.
TEST(FloatBlockAvx2, SmallRowsProductGivesTheKernelsBits) {
  if (!float_block_avx2_kernels()) GTEST_SKIP() << "this CPU has AVX-512 (or no AVX2 and FMA): LIBXSMM takes these";
  if (!SmallRowsProduct::supported(torch::zeros({2, 2}))) GTEST_SKIP() << "this build has no LIBXSMM";
  torch::manual_seed(32);
  const int64_t out = 3 * kBlock, in = 96;
  const auto weight = torch::randn({out, in});
  const auto bias = torch::randn({out});
  const SmallRowsProduct product(weight);
  // weight [out, in] -> the layout's blocks [out / 64, in, 64]
  const auto blocks = weight.view({out / kBlock, kBlock, in}).transpose(1, 2).contiguous();
  for (const bool dead : {false, true}) {
    for (int64_t rows = 1; rows <= kFloatBlockMaxRows; ++rows) {
      auto x = torch::randn({rows, in});
      if (dead) x.masked_fill_(torch::rand({1, in}) < 2.0 / 3.0, 0.0);
      const auto got = product.linear(x, bias, /*relu=*/true);  // [rows, out]
      for (int64_t b = 0; b < out / kBlock; ++b) {
        const auto sums = fma_in_order(blocks[b].data_ptr<float>(), x.data_ptr<float>(), rows, in, all_inputs(in));
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < kBlock; ++c) {
            const float expected =
                std::max(sums[static_cast<size_t>(r * kBlock + c)] + bias[b * kBlock + c].item<float>(), 0.0F);
            ASSERT_EQ(got[r][b * kBlock + c].item<float>(), expected)
                << rows << " rows, output " << b * kBlock + c << (dead ? ", dead inputs" : "");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tfm
