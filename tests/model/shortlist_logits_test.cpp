// The shortlist's output projection against a float64 reference: each row's dot products with
// its own list's rows of the matrix, -inf at padding.
#include "model/shortlist_logits.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace tfm {
namespace {

/// [M, C] lists of distinct sorted ids below `vocab`, list m of length lengths[m], then -1.
torch::Tensor random_lists(const std::vector<int64_t>& lengths, int64_t vocab, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t width = *std::max_element(lengths.begin(), lengths.end());
  auto lists = torch::full({static_cast<int64_t>(lengths.size()), width}, -1, torch::kLong);
  for (size_t m = 0; m < lengths.size(); ++m) {
    const auto ids = std::get<0>(torch::randperm(vocab, torch::kLong).slice(0, 0, lengths[m]).sort());
    lists[static_cast<int64_t>(m)].slice(0, 0, lengths[m]).copy_(ids);
  }
  return lists;
}

/// float64: logits[n][c] = hidden[n] . matrix[lists[n / rows_per_list][c]], -inf at padding.
torch::Tensor reference(const torch::Tensor& hidden, const torch::Tensor& matrix, const torch::Tensor& lists,
                        int64_t rows_per_list) {
  const auto per_row = lists.repeat_interleave(rows_per_list, 0);  // [N, C]
  auto out = torch::empty(per_row.sizes(), torch::kDouble);
  const auto h = hidden.to(torch::kDouble), w = matrix.to(torch::kDouble);
  for (int64_t n = 0; n < per_row.size(0); ++n) {
    for (int64_t c = 0; c < per_row.size(1); ++c) {
      const int64_t id = per_row[n][c].item<int64_t>();
      out[n][c] = id < 0 ? -std::numeric_limits<double>::infinity() : h[n].dot(w[id]).item<double>();
    }
  }
  return out;
}

void expect_matches(const torch::Tensor& got, const torch::Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.scalar_type(), torch::kFloat32) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto padding = want.isinf();
  EXPECT_TRUE(torch::equal(got.isinf(), padding)) << what << ": -inf exactly at padding";
  EXPECT_TRUE(got.masked_select(padding).lt(0).all().item<bool>()) << what;
  const auto error = (got.to(torch::kDouble) - want).masked_fill(padding, 0).abs().max().item<double>();
  EXPECT_LT(error, tolerance) << what;
}

TEST(ShortlistLogits, EachRowScoresItsOwnListsCandidates) {
  const int64_t vocab = 300;
  // Lists shorter and longer than a block of 16, of one and several blocks; 3 rows per list.
  const std::vector<int64_t> lengths{5, 40, 16, 33};
  const auto lists = random_lists(lengths, vocab, 1);
  for (const int64_t dim : {16, 48, 64}) {  // 48: bfloat16's pairs of 16 and a last 16
    torch::manual_seed(dim);
    const auto hidden = torch::randn({12, dim});
    const auto matrix = torch::randn({vocab, dim});
    const auto want = reference(hidden, matrix, lists, 3);
    expect_matches(shortlist_logits(hidden, matrix, lists, 3), want, 1e-4, "float32, D " + std::to_string(dim));
    // bfloat16 inputs, float32 sums: against the float64 products of the same bfloat16 values.
    const auto hidden16 = hidden.to(torch::kBFloat16), matrix16 = matrix.to(torch::kBFloat16);
    expect_matches(shortlist_logits(hidden16, matrix16, lists, 3), reference(hidden16, matrix16, lists, 3), 1e-3,
                   "bfloat16, D " + std::to_string(dim));
  }
}

TEST(ShortlistLogits, ShapesTheKernelDoesNotTakeGoThroughTheWholeVocabulary) {
  const int64_t vocab = 50;
  const auto lists = random_lists({7, 3}, vocab, 2);
  torch::manual_seed(3);
  const auto hidden = torch::randn({2, 10});  // D not a multiple of 16
  const auto matrix = torch::randn({vocab, 10});
  expect_matches(shortlist_logits(hidden, matrix, lists, 1), reference(hidden, matrix, lists, 1), 1e-5, "D 10");
  const auto doubles = shortlist_logits(hidden.to(torch::kDouble), matrix.to(torch::kDouble), lists, 1);
  expect_matches(doubles, reference(hidden, matrix, lists, 1), 1e-5, "float64");
}

TEST(ShortlistLogits, RejectsRowsThatDoNotFitTheLists) {
  const auto lists = torch::zeros({2, 4}, torch::kLong);
  EXPECT_THROW(shortlist_logits(torch::randn({5, 16}), torch::randn({8, 16}), lists, 2), c10::Error);
  EXPECT_THROW(shortlist_logits(torch::randn({4, 16}), torch::randn({8, 32}), lists, 2), c10::Error);
}

}  // namespace
}  // namespace tfm
