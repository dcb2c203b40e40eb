// The shortlist's int8 products (a model decoding in int8, on a CPU with AVX512-VNNI or AVX2)
// against a float64 reference of the same quantization: each hidden row to 8 bits with its own
// scale, each matrix row as quantize_int8_rows stores it (model/int8_weight.h).
#include "model/shortlist_int8.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "model/shortlist_logits.h"

namespace tfm {
namespace {

/// float64 listed logits from the definition: h quantized to round(h / s) with s = max |h| / 127
/// (in float32, as a CPU rounds it), times each candidate's int8 row and both scales.
torch::Tensor reference(const torch::Tensor& hidden, const Int8Rows& rows, const torch::Tensor& lists,
                        int64_t rows_per_list) {
  const auto scales = std::get<0>(hidden.abs().max(1)) / 127;  // [N] float32
  const auto quantized = (hidden * (1 / scales).unsqueeze(1)).round().to(torch::kDouble);
  const auto per_row = lists.repeat_interleave(rows_per_list, 0);  // [N, C]
  auto out = torch::full(per_row.sizes(), -std::numeric_limits<double>::infinity(), torch::kDouble);
  const auto values = rows.values.to(torch::kDouble);
  for (int64_t n = 0; n < per_row.size(0); ++n) {
    for (int64_t c = 0; c < per_row.size(1); ++c) {
      const int64_t id = per_row[n][c].item<int64_t>();
      if (id < 0) continue;
      out[n][c] =
          quantized[n].dot(values[id]).item<double>() * scales[n].item<double>() * rows.scales[id].item<double>();
    }
  }
  return out;
}

TEST(ShortlistInt8, ListedLogitsAreTheQuantizedRowsProducts) {
  if (!int8_listed_supported(128)) GTEST_SKIP() << "this CPU has no AVX2: the float32 kernel serves int8 models";
  const int64_t vocab = 400, dim = 128;
  torch::manual_seed(2);
  const auto matrix = torch::randn({vocab, dim});
  const auto rows = quantize_int8_rows(matrix);
  // Lists of one tile, several, and padding; rows per list in tiles of 4, 2 and 1.
  const std::vector<int64_t> lengths{3, 40, 17};
  auto lists = torch::full({3, 40}, -1, torch::kLong);
  for (int64_t m = 0; m < 3; ++m) {
    lists[m].slice(0, 0, lengths[m]).copy_(std::get<0>(torch::randperm(vocab).slice(0, 0, lengths[m]).sort()));
  }
  const ShortlistColumns columns = shortlist_columns(matrix, lists, row_moments(matrix));
  for (const int64_t rows_per_list : {1, 4, 7}) {
    const auto hidden = torch::randn({3 * rows_per_list, dim}) * 2 + 0.3;
    const auto want = reference(hidden, rows, lists, rows_per_list);
    const auto [listed, rest] = shortlist_logits(hidden, matrix, columns, rows_per_list, &rows);
    const auto [float_listed, float_rest] = shortlist_logits(hidden, matrix, columns, rows_per_list);
    const std::string what = std::to_string(rows_per_list) + " rows per list";
    ASSERT_EQ(listed.sizes(), want.sizes()) << what;
    EXPECT_TRUE(torch::equal(listed.isinf(), want.isinf())) << what;
    const auto padding = want.isinf();
    const auto error = (listed.to(torch::kDouble) - want).masked_fill(padding, 0).abs() / (1 + want.abs());
    EXPECT_LT(error.masked_fill(padding, 0).max().item<double>(), 1e-5) << what;
    // Against float32's products, the int8 ones are off by the quantization alone.
    const auto drift = (listed - float_listed).masked_fill(padding, 0).abs().max().item<double>();
    EXPECT_LT(drift, 0.1 * float_listed.masked_fill(padding, 0).abs().max().item<double>()) << what;
    EXPECT_TRUE(torch::equal(rest, float_rest)) << what << ": the left-out tokens' column is float32's";
  }
}

/// Every kernel int8_listed_kernels(dim) lists, on lists with padding and a list split between two
/// calls (threads), against the float64 reference and the first (fastest) kernel's bits.
void expect_every_kernel_agrees(int64_t dim) {
  const int64_t vocab = 300;
  const auto kernels = int8_listed_kernels(dim);
  torch::manual_seed(3);
  const auto rows = quantize_int8_rows(torch::randn({vocab, dim}));
  // Two lists, one with padding; 6 rows per list: tiles of 4 and 2 rows.
  auto lists = torch::full({2, 21}, -1, torch::kLong);
  lists[0].copy_(std::get<0>(torch::randperm(vocab).slice(0, 0, 21).sort()));
  lists[1].slice(0, 0, 13).copy_(std::get<0>(torch::randperm(vocab).slice(0, 0, 13).sort()));
  const int64_t rows_per_list = 6;
  const auto hidden = (torch::randn({2 * rows_per_list, dim}) * 3 - 0.2).contiguous();
  const auto want = reference(hidden, rows, lists, rows_per_list);
  const auto padding = want.isinf();
  torch::Tensor first;
  for (const auto kernel : kernels) {
    auto listed = torch::zeros({hidden.size(0), lists.size(1)});
    const Int8ListedViews views{hidden.data_ptr<float>(),
                                &rows,
                                lists.data_ptr<int64_t>(),
                                listed.data_ptr<float>(),
                                lists.size(1),
                                dim,
                                rows_per_list};
    int8_listed_rows(views, 0, 5, kernel);
    int8_listed_rows(views, 5, hidden.size(0), kernel);
    const std::string what =
        std::string(kernel == Int8Products::kVnni ? "VNNI" : "AVX2") + ", D " + std::to_string(dim);
    EXPECT_TRUE(torch::equal(listed.isinf(), padding)) << what;
    const auto error = (listed.to(torch::kDouble) - want).masked_fill(padding, 0).abs() / (1 + want.abs());
    EXPECT_LT(error.masked_fill(padding, 0).max().item<double>(), 1e-5) << what;
    if (!first.defined()) first = listed;
    EXPECT_TRUE(torch::equal(listed, first)) << what << " against the fastest kernel";
  }
}

// D 96: AVX2's steps of 32 bytes alone; D 128: VNNI's too, where the CPU has both.
TEST(ShortlistInt8, EveryKernelGivesTheReferencesProductsAndTheSameBits) {
  if (int8_listed_kernels(96).empty()) GTEST_SKIP() << "this CPU has no AVX2: the float32 kernel serves int8 models";
  expect_every_kernel_agrees(96);
  expect_every_kernel_agrees(128);
}

}  // namespace
}  // namespace tfm
