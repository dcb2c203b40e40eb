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
  for (const size_t first : {size_t{0}, size_t{3}}) {  // 3: a resumed epoch
    BatchPrefetcher prefetcher(data, batches, first, torch::kCPU);
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
  BatchPrefetcher prefetcher(data, batches, 0, torch::kCPU);  // destroyed with a batch in flight
}

}  // namespace
}  // namespace tfm
