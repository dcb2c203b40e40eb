#include "data/batch_split.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <random>
#include <set>

#include "text/special_ids.h"

namespace tfm {
namespace {

/// Right-padded rows of the given source and target lengths (eos/bos counted), as collate makes
/// them; row r's tokens are 10 + r (source), 20 + r (target_in) and 30 + r (target_out).
Batch rows_of(const std::vector<int64_t>& source, const std::vector<int64_t>& target) {
  const auto rows = static_cast<int64_t>(source.size());
  Batch batch;
  batch.source = torch::full({rows, *std::max_element(source.begin(), source.end())}, kPadId, torch::kLong);
  const int64_t width = *std::max_element(target.begin(), target.end());
  batch.target_in = torch::full({rows, width}, kPadId, torch::kLong);
  batch.target_out = torch::full({rows, width}, kPadId, torch::kLong);
  for (int64_t r = 0; r < rows; ++r) {
    batch.source[r].narrow(0, 0, source[r]).fill_(10 + r);
    batch.target_in[r].narrow(0, 0, target[r]).fill_(20 + r);
    batch.target_out[r].narrow(0, 0, target[r]).fill_(30 + r);
    batch.source_tokens += source[r];
    batch.target_tokens += target[r];
    batch.indices.push_back(100 + r);
  }
  return batch;
}

/// rows x (longest source + longest target) of a part, as split_batch weighs it with unit costs.
double unit_cost(const Batch& part) {
  return static_cast<double>(part.source.size(0) * (part.source.size(1) + part.target_out.size(1)));
}

TEST(SplitBatch, CutsRowsOrderedByTargetWhereTheLargerPartCostsLeast) {
  // Sources 1..5, targets 2..6 (already in target order). Cuts after rows 2, 3, 4 cost
  // max(2x5, 3x11)=33, max(3x7, 2x11)=22, max(4x9, 1x11)=36: the cut after three rows.
  const Batch batch = rows_of({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6});
  const auto parts = split_batch(batch, 2);
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].indices, (std::vector<int64_t>{100, 101, 102}));
  EXPECT_EQ(parts[1].indices, (std::vector<int64_t>{103, 104}));
  EXPECT_EQ(parts[0].source.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(parts[1].target_in.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(parts[1].target_out.sizes(), (std::vector<int64_t>{2, 6}));
  const auto rows = torch::tensor({0, 1, 2}, torch::kLong);
  EXPECT_TRUE(torch::equal(parts[0].source, batch.source.index_select(0, rows).narrow(1, 0, 3)));
  EXPECT_TRUE(torch::equal(parts[0].target_in, batch.target_in.index_select(0, rows).narrow(1, 0, 4)));
  EXPECT_TRUE(torch::equal(parts[0].target_out, batch.target_out.index_select(0, rows).narrow(1, 0, 4)));
  EXPECT_EQ(parts[0].source_tokens, 1 + 2 + 3);
  EXPECT_EQ(parts[1].target_tokens, 5 + 6);
  EXPECT_EQ(parts[0].source_tokens + parts[1].source_tokens, batch.source_tokens);
  EXPECT_EQ(parts[0].target_tokens + parts[1].target_tokens, batch.target_tokens);
}

TEST(SplitBatch, GroupsRowsByTargetLengthSoThePartsCarryLessPadding) {
  // A length-sorted batch: sources equal, targets mixed.
  const Batch batch = rows_of({6, 6, 6, 6, 6, 6}, {9, 3, 8, 2, 9, 3});
  const auto parts = split_batch(batch, 2);
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].indices, (std::vector<int64_t>{103, 101, 105}));  // targets 2, 3, 3 in that order
  EXPECT_EQ(parts[1].indices, (std::vector<int64_t>{102, 100, 104}));  // 8, 9, 9
  EXPECT_EQ(parts[0].target_out.size(1), 3);
  EXPECT_EQ(parts[1].target_out.size(1), 9);
  EXPECT_TRUE(torch::equal(parts[0].target_out[0], batch.target_out[3].narrow(0, 0, 3)));
  EXPECT_TRUE(torch::equal(parts[1].target_in[2], batch.target_in[4]));
}

TEST(SplitBatch, WeighsTheSidesByTheirCosts) {
  // Sources 1..6 with targets 6..1; in target order the sources run 6..1.
  const Batch batch = rows_of({1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1});
  // By target alone: targets 1..4 then 5..6 cost 4 x 4 and 2 x 6, the least largest (16).
  const auto by_target = split_batch(batch, 2, {0.0, 1.0});
  EXPECT_EQ(by_target[0].target_out.size(1), 4);
  // By source alone: sources 6, 5 then 4..1 cost 2 x 6 and 4 x 4, against 3 x 6 and 3 x 3.
  const auto by_source = split_batch(batch, 2, {1.0, 1e-6});
  EXPECT_EQ(by_source[0].source.size(0), 2);
  EXPECT_EQ(by_source[0].source.size(1), 6);
}

TEST(SplitBatch, TheLargestPartCostsNoMoreThanAnyContiguousCutsLargest) {
  std::mt19937 random(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t rows = 2 + static_cast<int64_t>(random() % 9);
    std::vector<int64_t> source(rows), target(rows);
    for (int64_t r = 0; r < rows; ++r) {
      source[r] = 1 + static_cast<int64_t>(random() % 12);
      target[r] = 1 + static_cast<int64_t>(random() % 12);
    }
    std::sort(source.begin(), source.end());  // as a batch comes: sorted by source
    const Batch batch = rows_of(source, target);
    for (const int64_t parts : {2, 3}) {
      const auto split = split_batch(batch, parts);
      ASSERT_LE(static_cast<int64_t>(split.size()), parts);
      std::multiset<int64_t> seen;
      double largest = 0;
      for (const auto& part : split) {
        seen.insert(part.indices.begin(), part.indices.end());
        largest = std::max(largest, unit_cost(part));
      }
      std::multiset<int64_t> all(batch.indices.begin(), batch.indices.end());
      EXPECT_EQ(seen, all);
      // Brute force over the rows in target order: every cut into `parts` contiguous groups.
      std::vector<int64_t> order(rows);
      for (int64_t r = 0; r < rows; ++r) order[r] = r;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::make_pair(target[a], source[a]) < std::make_pair(target[b], source[b]);
      });
      auto group_cost = [&](int64_t from, int64_t to) {
        int64_t s = 0, t = 0;
        for (int64_t i = from; i < to; ++i) s = std::max(s, source[order[i]]), t = std::max(t, target[order[i]]);
        return static_cast<double>((to - from) * (s + t));
      };
      double best = group_cost(0, rows);
      for (int64_t a = 1; a < rows; ++a) {
        best = std::min(best, std::max(group_cost(0, a), group_cost(a, rows)));
        if (parts == 3) {
          for (int64_t b = a + 1; b < rows; ++b) {
            best = std::min(best, std::max({group_cost(0, a), group_cost(a, b), group_cost(b, rows)}));
          }
        }
      }
      EXPECT_DOUBLE_EQ(largest, best) << "trial " << trial << ", " << parts << " parts";
    }
  }
}

TEST(SplitBatch, OnePartOrOneRowIsTheBatchItself) {
  const Batch batch = rows_of({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6});
  EXPECT_LE(split_batch(batch, 8).size(), 5U);
  const auto whole = split_batch(batch, 1);
  ASSERT_EQ(whole.size(), 1U);
  EXPECT_TRUE(whole[0].source.is_same(batch.source));
  EXPECT_EQ(split_batch(rows_of({3}, {4}), 2).size(), 1U);
  EXPECT_THROW(split_batch(batch, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
