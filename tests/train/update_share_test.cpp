#include "train/update_share.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tfm {
namespace {

TEST(UpdateShare, OneProcessTakesUpdateFreqBatchesAsBefore) {
  const auto share = share_of_update(4, 10, 3, 0, 1);
  EXPECT_EQ(share.begin, 4u);
  EXPECT_EQ(share.count, 3u);
  EXPECT_EQ(share.consumed, 3u);
  const auto last = share_of_update(9, 10, 3, 0, 1);
  EXPECT_EQ(last.count, 1u);
  EXPECT_EQ(last.consumed, 1u);
}

// The property the equivalence rests on: over all ranks, an update takes exactly the batches one
// process with --update-freq per_rank*ranks takes, each once, in the same order.
TEST(UpdateShare, RanksTogetherTakeWhatOneProcessWithTheirCombinedUpdateFreqTakes) {
  for (size_t batches : {1u, 5u, 12u, 13u}) {
    for (int ranks : {1, 2, 3}) {
      for (size_t per_rank : {1u, 2u}) {
        for (size_t first = 0; first < batches; first += per_rank * ranks) {
          std::vector<size_t> taken;
          size_t consumed = 0;
          for (int rank = 0; rank < ranks; ++rank) {
            const auto share = share_of_update(first, batches, per_rank, rank, ranks);
            EXPECT_LE(share.count, per_rank);
            for (size_t i = 0; i < share.count; ++i) taken.push_back(share.begin + i);
            consumed = share.consumed;  // the same on every rank
          }
          const auto single = share_of_update(first, batches, per_rank * ranks, 0, 1);
          std::vector<size_t> expected(single.count);
          std::iota(expected.begin(), expected.end(), single.begin);
          EXPECT_EQ(taken, expected) << batches << " batches, " << ranks << " ranks, " << per_rank << " per rank";
          EXPECT_EQ(consumed, single.consumed);
        }
      }
    }
  }
}

TEST(UpdateShare, RankBatchesAreTheSharesInOrderFromAResumePoint) {
  // From batch 1 of 7, two ranks, two each: updates take [1,2 | 3,4] and [5,6 | -].
  EXPECT_EQ(rank_batches(7, 1, 2, 0, 2), (std::vector<size_t>{1, 2, 5, 6}));
  EXPECT_EQ(rank_batches(7, 1, 2, 1, 2), (std::vector<size_t>{3, 4}));
  EXPECT_EQ(rank_batches(7, 0, 1, 0, 1), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(rank_batches(7, 7, 1, 0, 2).empty());
}

}  // namespace
}  // namespace tfm
