// The shortlist's output projection against a float64 reference: each row's dot products with
// its own list's rows of the matrix, -inf at padding.
#include "model/shortlist_logits.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

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

/// h^T cov h of each row of `h` ([N, D] float64) with cov in RowSpread's low-rank form, from the
/// eigenvalues of cov ([D, D] float64): the spread_rank(D) largest whole, the others' mean for all.
torch::Tensor low_rank_spreads(const torch::Tensor& h, const torch::Tensor& cov) {
  const int64_t dim = cov.size(0), rank = spread_rank(dim);
  const auto [values, vectors] = torch::linalg_eigh(cov);  // ascending
  const auto leading = vectors.slice(1, dim - rank);       // [D, r]
  const double rest_mean = rank < dim ? values.slice(0, 0, dim - rank).mean().item<double>() : 0.0;
  const auto along = h.mm(leading);  // [N, r]
  const auto across = h.square().sum(1) - along.square().sum(1);
  return (along.square() * values.slice(0, dim - rank)).sum(1) + rest_mean * across;
}

/// float64, from the definition: logits[n][c] = hidden[n] . matrix[lists[n / rows_per_list][c]],
/// -inf at padding; in column C, log(count) + h . mean + h^T cov h / 2 over the rows a list leaves
/// out (mean) and all rows (cov, in low-rank form).
torch::Tensor reference(const torch::Tensor& hidden, const torch::Tensor& matrix, const torch::Tensor& lists,
                        int64_t rows_per_list) {
  const auto per_row = lists.repeat_interleave(rows_per_list, 0);  // [N, C]
  const int64_t width = per_row.size(1), vocab = matrix.size(0);
  auto out = torch::empty({per_row.size(0), width + 1}, torch::kDouble);
  const auto h = hidden.to(torch::kDouble), w = matrix.to(torch::kDouble);
  const auto centered = w - w.mean(0, true);
  const auto cov = centered.t().mm(centered) / static_cast<double>(vocab);
  const auto spreads = low_rank_spreads(h, cov);  // [N]
  for (int64_t n = 0; n < per_row.size(0); ++n) {
    auto left = torch::ones({vocab}, torch::kBool);
    for (int64_t c = 0; c < width; ++c) {
      const int64_t id = per_row[n][c].item<int64_t>();
      out[n][c] = id < 0 ? -std::numeric_limits<double>::infinity() : h[n].dot(w[id]).item<double>();
      if (id >= 0) left[id] = false;
    }
    const auto rest = w.index({left});
    out[n][width] = std::log(static_cast<double>(rest.size(0))) + h[n].dot(rest.mean(0)).item<double>() +
                    0.5 * spreads[n].item<double>();
  }
  return out;
}

/// shortlist_logits over `matrix`'s lists, the way a decoder state holds them.
torch::Tensor logits_of(const torch::Tensor& hidden, const torch::Tensor& matrix, const torch::Tensor& lists,
                        int64_t rows_per_list) {
  const auto [listed, rest] =
      shortlist_logits(hidden, matrix, shortlist_columns(matrix, lists, row_moments(matrix)), rows_per_list);
  return torch::cat({listed, rest.unsqueeze(1)}, 1);  // [N, C + 1]
}

void expect_matches(const torch::Tensor& got, const torch::Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.scalar_type(), torch::kFloat32) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto padding = want.isinf();
  EXPECT_TRUE(torch::equal(got.isinf(), padding)) << what << ": -inf exactly at padding";
  EXPECT_TRUE(got.masked_select(padding).lt(0).all().item<bool>()) << what;
  const auto error = (got.to(torch::kDouble) - want).masked_fill(padding, 0).abs() / (1 + want.abs());
  EXPECT_LT(error.masked_fill(padding, 0).max().item<double>(), tolerance) << what;
}

TEST(ShortlistLogits, EachRowScoresItsOwnListsCandidates) {
  const int64_t vocab = 300;
  // Lists shorter and longer than a tile's candidates, of one and several tiles.
  const std::vector<int64_t> lengths{5, 40, 16, 33};
  const auto lists = random_lists(lengths, vocab, 1);
  // 48: bfloat16's pairs of 16 and a last 16; 64: on a CPU with AVX512-BF16, its dot product.
  // Rows per list: tiles of one, two and four queries, and 7 = 4 + 2 + 1.
  for (const int64_t dim : {16, 48, 64}) {
    for (const int64_t rows_per_list : {1, 2, 3, 4, 7}) {
      const std::string what = "D " + std::to_string(dim) + ", " + std::to_string(rows_per_list) + " rows per list";
      torch::manual_seed(dim + rows_per_list);
      const auto hidden = torch::randn({static_cast<int64_t>(lengths.size()) * rows_per_list, dim});
      const auto matrix = torch::randn({vocab, dim});
      const auto want = reference(hidden, matrix, lists, rows_per_list);
      expect_matches(logits_of(hidden, matrix, lists, rows_per_list), want, 1e-5, "float32, " + what);
      // bfloat16 inputs, float32 sums: against the float64 products of the same bfloat16 values
      // (the left-out rows' mean and covariance are rounded to bfloat16 too).
      const auto hidden16 = hidden.to(torch::kBFloat16), matrix16 = matrix.to(torch::kBFloat16);
      expect_matches(logits_of(hidden16, matrix16, lists, rows_per_list),
                     reference(hidden16, matrix16, lists, rows_per_list), 1e-2, "bfloat16, " + what);
    }
  }
}

TEST(ShortlistLogits, ShapesTheKernelDoesNotTakeGoThroughTheWholeVocabulary) {
  const int64_t vocab = 50;
  const auto lists = random_lists({7, 3}, vocab, 2);
  torch::manual_seed(3);
  const auto hidden = torch::randn({2, 10});  // D not a multiple of 16
  const auto matrix = torch::randn({vocab, 10});
  expect_matches(logits_of(hidden, matrix, lists, 1), reference(hidden, matrix, lists, 1), 1e-5, "D 10");
  const auto doubles = logits_of(hidden.to(torch::kDouble), matrix.to(torch::kDouble), lists, 1);
  expect_matches(doubles, reference(hidden, matrix, lists, 1), 1e-5, "float64");
}

// The left-out tokens' column estimates log sum exp of their logits: exactly, in expectation,
// when the matrix's rows are normally distributed, as here.
TEST(ShortlistLogits, TheLastColumnEstimatesTheLeftOutTokensLogSumExp) {
  const int64_t vocab = 20000, dim = 32;
  torch::manual_seed(7);
  const auto mixing = torch::randn({dim, dim}) * 0.04;  // correlated dimensions
  const auto matrix = torch::randn({vocab, dim}).mm(mixing) + 0.1;
  const auto hidden = torch::randn({4, dim});
  const auto lists = random_lists({40, 200}, vocab, 8);
  const auto got = logits_of(hidden, matrix, lists, 2);  // [4, 201]
  const auto all = hidden.mm(matrix.t()).to(torch::kDouble);
  for (int64_t n = 0; n < 4; ++n) {
    auto left = torch::ones({vocab}, torch::kBool);
    const auto list = lists[n / 2];
    left.index_fill_(0, list.masked_select(list.ge(0)), false);
    const double exact = all[n].masked_select(left).logsumexp(0).item<double>();
    EXPECT_NEAR(got[n][200].item<double>(), exact, 0.02) << "row " << n;
  }
}

TEST(ShortlistLogits, ARowsCandidatesScoreTheSameBitsAloneAsInABatch) {
  // A sentence's translation must not depend on the sentences batched with it: its candidates'
  // scores are the same bits whatever lists lie beside its own.
  const int64_t vocab = 20000, dim = 64;
  auto lists = random_lists({300, 57, 1, 200, 129}, vocab, 9);
  // Lists need not be sorted: the last one reversed.
  lists[4].slice(0, 0, 129).copy_(lists[4].slice(0, 0, 129).flip(0));
  torch::manual_seed(10);
  const auto matrix32 = torch::randn({vocab, dim});
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto matrix = matrix32.to(dtype);
    const auto columns = shortlist_columns(matrix, lists, row_moments(matrix));
    for (const int64_t rows_per_list : {1, 3, 4, 7}) {
      const std::string what = std::string(dtype == torch::kFloat32 ? "float32, " : "bfloat16, ") +
                               std::to_string(rows_per_list) + " rows per list";
      const auto hidden = torch::randn({lists.size(0) * rows_per_list, dim}).to(dtype);
      const auto batch = shortlist_logits(hidden, matrix, columns, rows_per_list);
      const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 1e-2;
      expect_matches(torch::cat({batch.listed, batch.rest.unsqueeze(1)}, 1),
                     reference(hidden, matrix, lists, rows_per_list), tolerance, what);
      for (int64_t m = 0; m < lists.size(0); ++m) {
        const auto alone_lists = lists.slice(0, m, m + 1);
        const auto alone = shortlist_logits(hidden.slice(0, m * rows_per_list, (m + 1) * rows_per_list), matrix,
                                            shortlist_columns(matrix, alone_lists, row_moments(matrix)), rows_per_list);
        const auto rows = torch::arange(m * rows_per_list, (m + 1) * rows_per_list);
        EXPECT_TRUE(torch::equal(alone.listed, batch.listed.index_select(0, rows))) << what << ", list " << m;
        // The left-out tokens' column takes LibTorch's product by the spread's basis, whose sums may
        // go in another order at another number of rows.
        EXPECT_TRUE(torch::allclose(alone.rest, batch.rest.index_select(0, rows), 1e-5, 1e-5))
            << what << ", list " << m;
      }
    }
  }
}

/// Lists that hold many of `shared`'s ids and some others, as a batch's lists hold a shortlist's
/// shared targets: [M, C] sorted, then -1; list m of length lengths[m].
torch::Tensor lists_around(const torch::Tensor& shared, const std::vector<int64_t>& lengths, int64_t vocab,
                           uint64_t seed) {
  auto lists = random_lists(lengths, vocab, seed);
  for (int64_t m = 0; m < lists.size(0); ++m) {
    // The first half of each list from the shared ids (distinct: a slice of a permutation).
    const int64_t half = std::min(lengths[m] / 2, shared.numel());
    const auto some = shared.index_select(0, torch::randperm(shared.numel(), torch::kLong).slice(0, 0, half));
    auto row = lists[m].slice(0, 0, lengths[m]);
    auto others = row.masked_select(torch::isin(row, some).logical_not()).slice(0, 0, lengths[m] - half);
    row.copy_(std::get<0>(torch::cat({some, others}).sort()));
  }
  return lists;
}

/// Shared candidates are scored on AMX tiles only: elsewhere shortlist_columns is never given them.
bool tiles_here() { return shared_candidates_supported(torch::zeros({2, 32}, torch::kBFloat16)); }

TEST(ShortlistLogits, SharedCandidatesOnTilesScoreWhatTheReferenceDoes) {
  if (!tiles_here()) GTEST_SKIP() << "this CPU has no AMX-BF16 tiles (or the build no kernels for them)";
  const int64_t vocab = 3000, dim = 64;
  // 200 shared ids: three whole blocks of 64 and a part of one.
  torch::manual_seed(11);
  const auto shared_ids = torch::randperm(vocab, torch::kLong).slice(0, 0, 200);
  const auto matrix = (torch::randn({vocab, dim}) * 0.5).to(torch::kBFloat16);
  const auto shared = shared_candidates(matrix, shared_ids);
  // 1 row (the blocks split among threads), 4 x 4 (one tile of rows, part empty), and 9 x 7 (four).
  for (const auto& [lengths, rows_per_list] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{150}, 1}, {{90, 3, 150, 41}, 4}, {{60, 150, 7, 33, 120, 90, 2, 11, 150}, 7}}) {
    const auto lists = lists_around(shared_ids, lengths, vocab, 12 + rows_per_list);
    const auto columns = shortlist_columns(matrix, lists, row_moments(matrix), 0, shared);
    ASSERT_TRUE(columns.shared);
    const auto hidden = torch::randn({lists.size(0) * rows_per_list, dim}).to(torch::kBFloat16);
    const auto got = shortlist_logits(hidden, matrix, columns, rows_per_list);
    expect_matches(torch::cat({got.listed, got.rest.unsqueeze(1)}, 1), reference(hidden, matrix, lists, rows_per_list),
                   1e-2, std::to_string(lengths.size()) + " lists of " + std::to_string(rows_per_list) + " rows");
    // The same columns as without shared candidates, up to the order of the sums.
    const auto plain =
        shortlist_logits(hidden, matrix, shortlist_columns(matrix, lists, row_moments(matrix)), rows_per_list);
    EXPECT_TRUE(torch::allclose(got.listed, plain.listed, 1e-4, 1e-4));
    EXPECT_TRUE(torch::equal(got.rest, plain.rest));
  }
}

TEST(ShortlistLogits, SharedCandidatesScoreTheSameBitsAloneAsInABatch) {
  if (!tiles_here()) GTEST_SKIP() << "this CPU has no AMX-BF16 tiles (or the build no kernels for them)";
  const int64_t vocab = 5000, dim = 64, rows_per_list = 4;
  torch::manual_seed(13);
  const auto shared_ids = torch::randperm(vocab, torch::kLong).slice(0, 0, 300);
  const auto matrix = torch::randn({vocab, dim}).to(torch::kBFloat16);
  const auto shared = shared_candidates(matrix, shared_ids);
  const auto lists = lists_around(shared_ids, {250, 57, 1, 200, 129, 40}, vocab, 14);
  const auto columns = shortlist_columns(matrix, lists, row_moments(matrix), 0, shared);
  const auto hidden = torch::randn({lists.size(0) * rows_per_list, dim}).to(torch::kBFloat16);
  const auto batch = shortlist_logits(hidden, matrix, columns, rows_per_list);
  for (int64_t m = 0; m < lists.size(0); ++m) {
    const auto rows = torch::arange(m * rows_per_list, (m + 1) * rows_per_list);
    const auto alone = shortlist_logits(
        hidden.index_select(0, rows), matrix,
        shortlist_columns(matrix, lists.slice(0, m, m + 1), row_moments(matrix), 0, shared), rows_per_list);
    EXPECT_TRUE(torch::equal(alone.listed, batch.listed.index_select(0, rows))) << "list " << m;
  }
  // Lists kept and joined as a running batch keeps and joins them: the same bits again.
  auto kept = columns;
  kept.select(torch::tensor({3, 0}));
  auto joined = shortlist_columns(matrix, lists.slice(0, 5, 6), row_moments(matrix), 0, shared);
  kept.append(joined);
  ASSERT_TRUE(kept.shared);
  const auto rows = torch::cat({torch::arange(12, 16), torch::arange(0, 4), torch::arange(20, 24)});
  const auto again = shortlist_logits(hidden.index_select(0, rows), matrix, kept, rows_per_list);
  EXPECT_TRUE(torch::equal(again.listed.slice(1, 0, batch.listed.size(1)), batch.listed.index_select(0, rows)));
}

TEST(ShortlistLogits, RejectsRowsThatDoNotFitTheLists) {
  const auto matrix = torch::randn({8, 16});
  const auto lists = torch::zeros({2, 4}, torch::kLong);
  const auto columns = shortlist_columns(matrix, lists, row_moments(matrix));
  EXPECT_THROW(shortlist_logits(torch::randn({5, 16}), matrix, columns, 2), c10::Error);
  EXPECT_THROW(shortlist_logits(torch::randn({4, 16}), torch::randn({8, 32}), columns, 2), c10::Error);
}

}  // namespace
}  // namespace tfm
