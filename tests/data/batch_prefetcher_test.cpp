#include "data/batch_prefetcher.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/data_test_support.h"

namespace tfm {
namespace {

TEST(BatchPrefetcher, YieldsTheBatchesCollateGivesInOrder) {
  const ParallelDataset data = testing::random_dataset(300, 20, 5);
  BatchingOptions options;
  options.max_tokens = 200;
  const auto batches = make_batches(data, options, 1);
  ASSERT_GT(batches.size(), 5u);
  BatchPrefetcher prefetcher(data, torch::kCPU);       // one worker across epochs
  for (const size_t first : {size_t{0}, size_t{3}}) {  // 3: a resumed epoch
    prefetcher.begin_epoch(batches, first);
    for (size_t i = first; i < batches.size(); ++i) {
      const Batch got = prefetcher.next();
      const Batch expected = collate(data, batches[i]);
      EXPECT_TRUE(torch::equal(got.source, expected.source)) << "batch " << i;
      EXPECT_TRUE(torch::equal(got.target_in, expected.target_in)) << "batch " << i;
      EXPECT_TRUE(torch::equal(got.target_out, expected.target_out)) << "batch " << i;
      EXPECT_EQ(got.target_tokens, expected.target_tokens);
    }
    EXPECT_THROW(prefetcher.next(), std::out_of_range);
  }
}

TEST(BatchPrefetcher, StoppingEarlyIsSafe) {
  const ParallelDataset data = testing::random_dataset(100, 10, 6);
  const auto batches = make_batches(data, BatchingOptions{}, 1);
  BatchPrefetcher prefetcher(data, torch::kCPU);
  prefetcher.begin_epoch(batches, 0);  // destroyed with a batch in flight
}

TEST(BatchPrefetcher, AnEpochCutShortGivesWayToTheNext) {
  // A run that stops mid-epoch, or an epoch begun while the worker still collates the old one:
  // the new epoch's batches come out, in order, with nothing left over from the old one.
  const ParallelDataset data = testing::random_dataset(200, 12, 7);
  BatchingOptions options;
  options.max_tokens = 100;
  const auto first_epoch = make_batches(data, options, 1);
  const auto second_epoch = make_batches(data, options, 2);
  BatchPrefetcher prefetcher(data, torch::kCPU);
  prefetcher.begin_epoch(first_epoch, 0);
  prefetcher.next();
  prefetcher.begin_epoch(second_epoch, 1);
  for (size_t i = 1; i < second_epoch.size(); ++i) {
    EXPECT_TRUE(torch::equal(prefetcher.next().source, collate(data, second_epoch[i]).source)) << "batch " << i;
  }
  EXPECT_THROW(prefetcher.next(), std::out_of_range);
}

}  // namespace
}  // namespace tfm
