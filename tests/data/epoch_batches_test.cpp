#include "data/epoch_batches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "data/dataset_file.h"
#include "tests/data_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// Three shards of different sizes, each a separate random dataset.
std::vector<Shard> three_shards() {
  return {testing::random_shard(200, 20, 1), testing::random_shard(50, 20, 2), testing::random_shard(120, 20, 3)};
}

using Sentences = std::multiset<std::vector<int64_t>>;

/// The source sentences of every batch of `epoch` (eos and padding stripped).
Sentences sources_of(EpochBatches& epoch) {
  Sentences seen;
  for (size_t g = 0; g < epoch.size(); ++g) {
    const Batch batch = epoch.collate(g);
    for (int64_t b = 0; b < batch.source.size(0); ++b) {
      const auto row = batch.source[b];
      const int64_t* ids = row.data_ptr<int64_t>();
      seen.insert(std::vector<int64_t>(ids, std::find(ids, ids + row.numel(), kEosId)));
    }
  }
  return seen;
}

TEST(EpochBatches, EveryPairOfEveryShardOnceAnEpochInAnOrderThatChanges) {
  const std::vector<Shard> shards = three_shards();
  BatchingOptions options;
  options.max_tokens = 100;
  const std::vector<size_t> counts = count_batches(shards, options);
  size_t total = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    EXPECT_EQ(counts[k], make_batches(shards[k], options, 1, k).size());
    total += counts[k];
  }
  Sentences all;
  for (const Shard& shard : shards) {
    for (int64_t i = 0; i < shard.size(); ++i) all.insert(shard.source_ids(i));
  }
  EpochBatches first(shards, counts, options, 1), second(shards, counts, options, 2);
  ASSERT_EQ(first.size(), total);
  EXPECT_EQ(sources_of(first), all);
  EXPECT_EQ(sources_of(second), all);
  // Another epoch, another order: some batch differs.
  EpochBatches again(shards, counts, options, 1);
  bool differs = false;
  for (size_t g = 0; g < total && !differs; ++g) {
    differs = !torch::equal(again.collate(g).source, second.collate(g).source) ||
              again.collate(g).source.sizes() != second.collate(g).source.sizes();
  }
  EXPECT_TRUE(differs);
}

TEST(EpochBatches, TheSameEpochGivesTheSameBatchesInAnyOrderOfAccess) {
  const std::vector<Shard> shards = three_shards();
  BatchingOptions options;
  options.max_tokens = 64;
  const auto counts = count_batches(shards, options);
  EpochBatches forward(shards, counts, options, 3), backward(shards, counts, options, 3);
  std::vector<Batch> ahead;
  for (size_t g = 0; g < forward.size(); ++g) ahead.push_back(forward.collate(g));
  for (size_t g = backward.size(); g-- > 0;) {  // a resume starts anywhere; each shard is rebuilt the same
    EXPECT_TRUE(torch::equal(backward.collate(g).source, ahead[g].source)) << "batch " << g;
  }
}

TEST(EpochBatches, OneShardGivesWhatMakeBatchesGives) {
  const std::vector<Shard> shards = {testing::random_shard(300, 30, 4)};
  BatchingOptions options;
  options.max_tokens = 90;
  EpochBatches epoch(shards, count_batches(shards, options), options, 5);
  const auto batches = make_batches(shards[0], options, 5);
  ASSERT_EQ(epoch.size(), batches.size());
  for (size_t g = 0; g < batches.size(); ++g) EXPECT_EQ(epoch.collate(g).indices, batches[g]) << "batch " << g;
  EXPECT_THROW(epoch.collate(batches.size()), std::out_of_range);
}

TEST(EpochBatches, ADamagedShardStopsAtItsFirstBatchNamingIt) {
  testing::TempDir dir;
  const std::string path = (dir / "train.001.bin").string();
  save_dataset(testing::random_dataset(40, 10, 6), 1000, path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[100] ^= 0x20;  // an id: the header and size stay right
  testing::write_text(path, bytes);
  const std::vector<Shard> shards = {open_shard(path)};
  BatchingOptions options;
  EpochBatches epoch(shards, count_batches(shards, options), options, 1);
  const std::string message = testing::error_of<std::runtime_error>([&] { epoch.collate(0); });
  EXPECT_NE(message.find(path + ": corrupt dataset file (checksum mismatch"), std::string::npos) << message;
}

}  // namespace
}  // namespace tfm
