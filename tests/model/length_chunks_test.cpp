#include "model/length_chunks.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

int64_t cost_of(const std::vector<LengthChunk>& chunks, int64_t chunk_cost) {
  int64_t cost = 0;
  for (const auto& chunk : chunks) cost += static_cast<int64_t>(chunk.rows.size()) * chunk.longest + chunk_cost;
  return cost;
}

/// The least cost over every way of cutting the lengths, sorted longest first, into runs: each of
/// the 2^(B-1) cut sets tried, for a reference that shares nothing with length_chunks().
int64_t brute_force_least_cost(std::vector<int64_t> lengths, int64_t chunk_cost) {
  std::sort(lengths.rbegin(), lengths.rend());
  const auto rows = static_cast<int64_t>(lengths.size());
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int64_t cuts = 0; cuts < (int64_t{1} << (rows - 1)); ++cuts) {
    int64_t cost = chunk_cost, longest = lengths[0];
    for (int64_t i = 0; i < rows; ++i) {
      if (i > 0 && (cuts >> (i - 1) & 1) != 0) {
        cost += chunk_cost;
        longest = lengths[i];
      }
      cost += longest;
    }
    best = std::min(best, cost);
  }
  return best;
}

TEST(LengthChunks, EveryRowOnceInRunsOfTheLongestFirst) {
  torch::manual_seed(3);
  const auto drawn = torch::randint(1, 60, {300}, torch::kLong);
  const std::vector<int64_t> lengths(drawn.data_ptr<int64_t>(), drawn.data_ptr<int64_t>() + drawn.numel());
  const auto chunks = length_chunks(lengths, 64);
  ASSERT_GT(chunks.size(), 1U);
  std::vector<int> seen(lengths.size(), 0);
  int64_t previous = std::numeric_limits<int64_t>::max();
  for (const auto& chunk : chunks) {
    ASSERT_FALSE(chunk.rows.empty());
    EXPECT_EQ(chunk.longest, lengths[chunk.rows.front()]);
    for (const int64_t row : chunk.rows) {
      ++seen[row];
      EXPECT_LE(lengths[row], previous) << "row " << row;
      previous = lengths[row];
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int count) { return count == 1; }));
}

TEST(LengthChunks, CostTheLeastOfEveryCutOfTheSortedRows) {
  for (const int64_t seed : {1, 2, 3, 4, 5, 6}) {
    torch::manual_seed(seed);
    const auto drawn = torch::randint(1, 40, {12}, torch::kLong);
    const std::vector<int64_t> lengths(drawn.data_ptr<int64_t>(), drawn.data_ptr<int64_t>() + drawn.numel());
    for (const int64_t chunk_cost : {0, 8, 30, 1000}) {
      EXPECT_EQ(cost_of(length_chunks(lengths, chunk_cost), chunk_cost), brute_force_least_cost(lengths, chunk_cost))
          << "seed " << seed << ", chunk cost " << chunk_cost;
    }
  }
}

TEST(LengthChunks, OneChunkWhenPartingSavesNothing) {
  EXPECT_EQ(length_chunks({7, 7, 7, 7}, 0).size(), 1U);
  EXPECT_EQ(length_chunks({12, 11, 10, 12}).size(), 1U);
  EXPECT_TRUE(length_chunks({}).empty());
}

TEST(LengthChunks, RowsOfNoTokensStillTakeOnePosition) {
  std::vector<int64_t> lengths(300, 0);
  lengths[0] = 40;
  const auto chunks = length_chunks(lengths);
  ASSERT_EQ(chunks.size(), 2U);
  EXPECT_EQ(chunks[1].rows.size(), 299U);
  EXPECT_EQ(chunks[1].longest, 1);
}

TEST(LengthChunks, ALongSentenceNoLongerPadsTheShortOnesOfItsBatch) {
  // A server's batch: one long request among short ones.
  std::vector<int64_t> lengths(40, 10);
  lengths.insert(lengths.begin() + 17, 200);
  const auto chunks = length_chunks(lengths);
  ASSERT_EQ(chunks.size(), 2U);
  EXPECT_EQ(chunks[0].rows, std::vector<int64_t>{17});
  EXPECT_EQ(chunks[1].rows.size(), 40U);
  EXPECT_EQ(chunks[1].longest, 10);
}

TEST(LengthChunks, MaskLengthsCountTheRealTokens) {
  const auto mask = torch::tensor({1, 1, 1, 0, 1, 0, 0, 0}, torch::kBool).view({2, 1, 1, 4});
  EXPECT_EQ(mask_lengths(mask), (std::vector<int64_t>{3, 1}));
}

TEST(ComputeInLengthChunks, GivesTheWholeBatchsResultAtRealTokens) {
  // A row-wise computation whose every position depends on the row's earlier real tokens, as an
  // encoder's depends on its sentence: a running sum of token values, masked, in 3 features.
  const RowsComputation running_sums = [](const torch::Tensor& tokens, const torch::Tensor& mask) {
    const auto real = mask.view({tokens.size(0), tokens.size(1)}).to(torch::kFloat);  // [n, L]
    const auto sums = (tokens.to(torch::kFloat) * real).cumsum(1).unsqueeze(2);       // [n, L, 1]
    return torch::cat({sums, sums * 2, -sums}, 2);                                    // [n, L, 3]
  };
  const std::vector<int64_t> lengths{4, 9, 1, 9, 3, 4};
  auto tokens = torch::zeros({6, 9}, torch::kLong);
  auto mask = torch::zeros({6, 1, 1, 9}, torch::kBool);
  for (int64_t b = 0; b < 6; ++b) {
    tokens[b].narrow(0, 0, lengths[b]).copy_(torch::arange(1, lengths[b] + 1) * (b + 1));
    mask[b].narrow(2, 0, lengths[b]).fill_(true);
  }
  const auto chunks = length_chunks(lengths, 2);
  ASSERT_GT(chunks.size(), 1U);
  const auto chunked = compute_in_length_chunks(tokens, mask, chunks, running_sums);  // [6, 9, 3]
  const auto whole = running_sums(tokens, mask);
  const auto real = mask.view({6, 9, 1});
  EXPECT_TENSOR_NEAR(chunked * real, whole * real, 0.0);
  EXPECT_EQ(chunked.narrow(1, 4, 5).narrow(0, 0, 1).count_nonzero().item<int64_t>(), 0);  // past its chunk
}

}  // namespace
}  // namespace tfm
