#include "data/batch_split.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "text/special_ids.h"

namespace tfm {
namespace {

/// Five right-padded rows of source lengths 1..5 (with eos) and target lengths 2..6, as collate
/// makes them: longest last, as a batch of length-sorted pairs has them.
Batch five_rows() {
  Batch batch;
  batch.source = torch::full({5, 5}, kPadId, torch::kLong);
  batch.target_in = torch::full({5, 6}, kPadId, torch::kLong);
  batch.target_out = torch::full({5, 6}, kPadId, torch::kLong);
  for (int64_t r = 0; r < 5; ++r) {
    batch.source[r].narrow(0, 0, r + 1).fill_(10 + r);
    batch.target_in[r].narrow(0, 0, r + 2).fill_(20 + r);
    batch.target_out[r].narrow(0, 0, r + 2).fill_(30 + r);
    batch.source_tokens += r + 1;
    batch.target_tokens += r + 2;
    batch.indices.push_back(100 + r);
  }
  return batch;
}

TEST(SplitBatch, AlternatesRowsAndTrimsEachPartsPadding) {
  const Batch batch = five_rows();
  const auto parts = split_batch(batch, 2);
  ASSERT_EQ(parts.size(), 2U);
  // Part 0: rows 0, 2, 4 (longest 5 and 6); part 1: rows 1, 3 (longest 4 and 5).
  EXPECT_EQ(parts[0].indices, (std::vector<int64_t>{100, 102, 104}));
  EXPECT_EQ(parts[1].indices, (std::vector<int64_t>{101, 103}));
  EXPECT_EQ(parts[0].source.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(parts[1].source.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(parts[1].target_in.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(parts[1].target_out.sizes(), (std::vector<int64_t>{2, 5}));
  const auto rows = torch::tensor({1, 3}, torch::kLong);
  EXPECT_TRUE(torch::equal(parts[1].source, batch.source.index_select(0, rows).narrow(1, 0, 4)));
  EXPECT_TRUE(torch::equal(parts[1].target_in, batch.target_in.index_select(0, rows).narrow(1, 0, 5)));
  EXPECT_TRUE(torch::equal(parts[1].target_out, batch.target_out.index_select(0, rows).narrow(1, 0, 5)));
  EXPECT_EQ(parts[0].source_tokens, 1 + 3 + 5);
  EXPECT_EQ(parts[1].target_tokens, 3 + 5);
  EXPECT_EQ(parts[0].source_tokens + parts[1].source_tokens, batch.source_tokens);
  EXPECT_EQ(parts[0].target_tokens + parts[1].target_tokens, batch.target_tokens);
}

TEST(SplitBatch, NoMorePartsThanRows) {
  const Batch batch = five_rows();
  EXPECT_EQ(split_batch(batch, 8).size(), 5U);
  const auto whole = split_batch(batch, 1);
  ASSERT_EQ(whole.size(), 1U);
  EXPECT_TRUE(whole[0].source.is_same(batch.source));
  EXPECT_THROW(split_batch(batch, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
