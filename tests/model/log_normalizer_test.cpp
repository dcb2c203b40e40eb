#include "model/log_normalizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

TEST(LogNormalizers, EqualLogSumExpInFloat64) {
  torch::manual_seed(11);
  // Widths around the 16 lanes, logits spread wide enough that most terms underflow.
  for (const int64_t width : {1, 15, 16, 17, 8000}) {
    auto logits = torch::randn({7, width}) * 30.0;
    logits[2].fill_(-5.0);  // a flat row: log(width) - 5
    const auto expected = torch::logsumexp(logits.to(torch::kFloat64), -1);
    EXPECT_TENSOR_NEAR(log_normalizers(logits).normalizers, expected.to(torch::kFloat32), 2e-5) << "width " << width;
  }
}

TEST(LogNormalizers, BFloat16RowsAreReadAsTheyAre) {
  torch::manual_seed(12);
  const auto logits = (torch::randn({5, 300}) * 4.0).to(torch::kBFloat16);
  const auto expected = torch::logsumexp(logits.to(torch::kFloat64), -1).to(torch::kFloat32);
  EXPECT_TENSOR_NEAR(log_normalizers(logits).normalizers, expected, 2e-5);
}

TEST(LogNormalizers, MaskedCellsCountForNothing) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  auto logits = torch::full({3, 40}, kNegInf);
  logits[0][3] = 2.0;                   // one live cell: its own value
  logits[1].narrow(0, 0, 20).fill_(0);  // twenty equal cells: log 20
  const auto out = log_normalizers(logits).normalizers;
  EXPECT_FLOAT_EQ(out[0].item<float>(), 2.0F);
  EXPECT_NEAR(out[1].item<float>(), std::log(20.0F), 1e-6);
  EXPECT_EQ(out[2].item<float>(), kNegInf);  // nothing live at all
}

TEST(LogNormalizers, BlockMaximaAreEachBlocksLargestLogit) {
  torch::manual_seed(13);
  // One block, one and a bit, several with a short last one; float32 and bfloat16.
  for (const int64_t width : {int64_t{5}, kLogitBlock, kLogitBlock + 1, 3 * kLogitBlock + 40}) {
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      const auto logits = (torch::randn({4, width}) * 5.0).to(dtype);
      const int64_t blocks = (width + kLogitBlock - 1) / kLogitBlock;
      const auto padded = torch::constant_pad_nd(logits.to(torch::kFloat32), {0, blocks * kLogitBlock - width},
                                                 -std::numeric_limits<double>::infinity());
      const auto expected = std::get<0>(padded.view({4, blocks, kLogitBlock}).max(-1));
      EXPECT_TRUE(torch::equal(log_normalizers(logits).block_maxima, expected)) << "width " << width;
    }
  }
}

}  // namespace
}  // namespace tfm
