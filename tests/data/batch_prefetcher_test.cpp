#include "data/batch_prefetcher.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/data_test_support.h"

namespace tfm {
namespace {

/// Collates batch i of `batches` from `data` (both must outlive the prefetcher's epoch).
BatchPrefetcher::Collate collating(const Shard& data, const std::vector<std::vector<int64_t>>& batches) {
  return [&data, &batches](size_t i) { return collate(data, batches[i]); };
}

TEST(BatchPrefetcher, YieldsTheBatchesCollateGivesInOrder) {
  const Shard data = testing::random_shard(300, 20, 5);
  BatchingOptions options;
  options.max_tokens = 200;
  const auto batches = make_batches(data, options, 1);
  ASSERT_GT(batches.size(), 5u);
  BatchPrefetcher prefetcher(torch::kCPU);             // one worker across epochs
  for (const size_t first : {size_t{0}, size_t{3}}) {  // 3: a resumed epoch
    prefetcher.begin_epoch(batches.size(), collating(data, batches), first);
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
  const Shard data = testing::random_shard(100, 10, 6);
  const auto batches = make_batches(data, BatchingOptions{}, 1);
  BatchPrefetcher prefetcher(torch::kCPU);
  prefetcher.begin_epoch(batches.size(), collating(data, batches), 0);  // destroyed with a batch in flight
}

TEST(BatchPrefetcher, AnEpochCutShortGivesWayToTheNext) {
  // A run that stops mid-epoch, or an epoch begun while the worker still collates the old one:
  // the new epoch's batches come out, in order, with nothing left over from the old one.
  const Shard data = testing::random_shard(200, 12, 7);
  BatchingOptions options;
  options.max_tokens = 100;
  const auto first_epoch = make_batches(data, options, 1);
  const auto second_epoch = make_batches(data, options, 2);
  BatchPrefetcher prefetcher(torch::kCPU);
  prefetcher.begin_epoch(first_epoch.size(), collating(data, first_epoch), 0);
  prefetcher.next();
  prefetcher.begin_epoch(second_epoch.size(), collating(data, second_epoch), 1);
  for (size_t i = 1; i < second_epoch.size(); ++i) {
    EXPECT_TRUE(torch::equal(prefetcher.next().source, collate(data, second_epoch[i]).source)) << "batch " << i;
  }
  EXPECT_THROW(prefetcher.next(), std::out_of_range);
}

}  // namespace
}  // namespace tfm
