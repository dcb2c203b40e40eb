#include "data/batching.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "data/prepare_dataset.h"
#include "tests/data_test_support.h"

namespace tfm {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

/// Checks the two promises of make_batches: each pair exactly once, and no side over budget.
void expect_valid_batches(const Shard& data, const Batches& batches, const BatchingOptions& options) {
  std::vector<int> seen(static_cast<size_t>(data.size()), 0);
  for (const auto& batch : batches) {
    ASSERT_FALSE(batch.empty());
    int64_t longest_source = 0, longest_target = 0;
    for (const int64_t i : batch) {
      ++seen.at(static_cast<size_t>(i));
      longest_source = std::max(longest_source, data.source_length(i) + 1);
      longest_target = std::max(longest_target, data.target_length(i) + 1);
    }
    const int64_t sentences = static_cast<int64_t>(batch.size());
    EXPECT_LE(sentences * longest_source, options.max_tokens);
    EXPECT_LE(sentences * longest_target, options.max_tokens);
    if (options.max_sentences > 0) {
      EXPECT_LE(sentences, options.max_sentences);
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "pair " << i;
}

TEST(Batching, EveryPairInExactlyOneBatchWithinBudget) {
  const Shard data = testing::random_shard(5000, 80, 11);
  for (const int64_t max_tokens : {81, 200, 1000, 4096}) {
    for (const int64_t max_sentences : {0, 7}) {
      BatchingOptions options;
      options.max_tokens = max_tokens;
      options.max_sentences = max_sentences;
      for (const int64_t epoch : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "max_tokens " << max_tokens << " max_sentences " << max_sentences);
        const Batches batches = make_batches(data, options, epoch);
        expect_valid_batches(data, batches, options);
        const BatchingStats stats = batching_stats(data, options);
        EXPECT_EQ(stats.batches, batches.size());
        EXPECT_DOUBLE_EQ(stats.padding_efficiency(), padding_efficiency(data, batches));
      }
    }
  }
}

/// make_batches as it was written first (a comparison sort of the shuffled pairs), the reference
/// for its counting sort: SplitMix64 and Fisher-Yates as batching.cpp defines them.
Batches reference_batches(const Shard& data, const BatchingOptions& options, int64_t epoch) {
  uint64_t state = 0;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  state = options.seed;
  state = next() ^ static_cast<uint64_t>(epoch);
  auto shuffle = [&next](auto& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[next() % i]);
  };
  std::vector<int64_t> order(static_cast<size_t>(data.size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  shuffle(order);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return data.source_length(a) != data.source_length(b) ? data.source_length(a) < data.source_length(b)
                                                          : data.target_length(a) < data.target_length(b);
  });
  Batches batches;
  std::vector<int64_t> batch;
  int64_t source = 0, target = 0;
  for (const int64_t i : order) {
    const int64_t s = std::max(source, data.source_length(i) + 1), t = std::max(target, data.target_length(i) + 1);
    const auto n = static_cast<int64_t>(batch.size()) + 1;
    if (n * s > options.max_tokens || n * t > options.max_tokens ||
        (options.max_sentences > 0 && n > options.max_sentences)) {
      batches.push_back(batch);
      batch.clear();
      source = data.source_length(i) + 1, target = data.target_length(i) + 1;
    } else {
      source = s, target = t;
    }
    batch.push_back(i);
  }
  if (!batch.empty()) batches.push_back(batch);
  shuffle(batches);
  return batches;
}

TEST(Batching, CountingSortGivesTheBatchesOfAComparisonSort) {
  const Shard data = testing::random_shard(3000, 60, 9);
  for (const int64_t max_tokens : {61, 500, 4096}) {
    for (const int64_t max_sentences : {0, 5}) {
      BatchingOptions options;
      options.max_tokens = max_tokens;
      options.max_sentences = max_sentences;
      for (const int64_t epoch : {1, 4}) {
        EXPECT_EQ(make_batches(data, options, epoch), reference_batches(data, options, epoch))
            << "max_tokens " << max_tokens << " max_sentences " << max_sentences << " epoch " << epoch;
      }
    }
  }
}

TEST(Batching, SameSeedAndEpochGiveTheSameBatches) {
  const Shard data = testing::random_shard(2000, 40, 5);
  BatchingOptions options;
  options.max_tokens = 500;
  EXPECT_EQ(make_batches(data, options, 3), make_batches(data, options, 3));
  BatchingOptions other_seed = options;
  other_seed.seed = 2;
  EXPECT_NE(make_batches(data, options, 3), make_batches(data, other_seed, 3));
}

TEST(Batching, DifferentEpochsGiveDifferentOrders) {
  const Shard data = testing::random_shard(2000, 40, 5);
  BatchingOptions options;
  options.max_tokens = 500;
  const Batches first = make_batches(data, options, 1), second = make_batches(data, options, 2);
  EXPECT_NE(first, second);
  ASSERT_GT(first.size(), 10u);
  EXPECT_NE(first.front(), second.front());
}

TEST(Batching, PairTooLongForTheBudgetThrowsNamingItInsteadOfLooping) {
  ParallelDataset pairs = testing::random_dataset(100, 10, 5);
  pairs.append(std::vector<int64_t>(30, 7), std::vector<int64_t>(5, 7));  // pair 100: 31 tokens with eos
  const Shard data = testing::as_shard(pairs);
  BatchingOptions options;
  options.max_tokens = 30;
  const std::string message = testing::error_of<std::invalid_argument>([&] { make_batches(data, options, 1); });
  EXPECT_NE(message.find("pair 100 has 31 source and 6 target tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("max_tokens 30"), std::string::npos) << message;
  options.max_tokens = 31;  // exactly fits: alone in its batch
  expect_valid_batches(data, make_batches(data, options, 1), options);
}

TEST(Batching, RejectsBadOptionsAndHandlesEmptyData) {
  BatchingOptions options;
  options.max_tokens = 1;
  const Shard empty = testing::as_shard({});
  EXPECT_THROW(make_batches(empty, options, 1), std::invalid_argument);
  options.max_tokens = 100;
  options.max_sentences = -1;
  EXPECT_THROW(make_batches(empty, options, 1), std::invalid_argument);
  options.max_sentences = 0;
  EXPECT_TRUE(make_batches(empty, options, 1).empty());
  EXPECT_EQ(batching_stats(empty, options).batches, 0u);
}

TEST(Batching, CollateAddsEosAndBosAndPads) {
  ParallelDataset pairs;
  pairs.append({10, 11, 12}, {20, 21});
  pairs.append({13}, {22, 23, 24, 25});
  const Shard data = testing::as_shard(pairs);
  const Batch batch = collate(data, {1, 0});
  // source [B=2, S=4], target [B=2, T=5]
  const auto expect_rows = [](const torch::Tensor& tensor, const std::vector<std::vector<int64_t>>& rows) {
    ASSERT_EQ(tensor.dtype(), torch::kLong);
    ASSERT_EQ(tensor.sizes(), (std::vector<int64_t>{2, static_cast<int64_t>(rows[0].size())}));
    for (int64_t b = 0; b < 2; ++b) {
      const auto row = tensor[b];
      EXPECT_EQ(std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()), rows[b]);
    }
  };
  expect_rows(batch.source, {{13, kEosId, kPadId, kPadId}, {10, 11, 12, kEosId}});
  expect_rows(batch.target_in, {{kBosId, 22, 23, 24, 25}, {kBosId, 20, 21, kPadId, kPadId}});
  expect_rows(batch.target_out, {{22, 23, 24, 25, kEosId}, {20, 21, kEosId, kPadId, kPadId}});
  EXPECT_EQ(batch.source_tokens, 6);
  EXPECT_EQ(batch.target_tokens, 8);
  EXPECT_EQ(batch.indices, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(batch.source_tokens, batch.source.ne(kPadId).sum().item<int64_t>());
  EXPECT_EQ(batch.target_tokens, batch.target_out.ne(kPadId).sum().item<int64_t>());
  EXPECT_THROW(collate(data, {}), std::invalid_argument);
  EXPECT_THROW(collate(data, {2}), std::invalid_argument);
}

TEST(Batching, PaddingEfficiencyCountsBothSides) {
  ParallelDataset pairs;
  pairs.append({5, 5, 5}, {5});  // source 4 (with eos), target 2
  pairs.append({5}, {5});        // source 2, target 2
  const Shard data = testing::as_shard(pairs);
  // Real: 4 + 2 + 2 + 2 = 10; padded: 2 x 4 + 2 x 2 = 12.
  EXPECT_DOUBLE_EQ(padding_efficiency(data, {{0, 1}}), 10.0 / 12.0);
  EXPECT_DOUBLE_EQ(padding_efficiency(data, {{0}, {1}}), 1.0);
}

// Issue 3's acceptance check: Multi30k train in batches of 4096 tokens wastes under 10% on padding.
TEST(BatchingMulti30k, PaddingEfficiencyAtLeastNinetyPercent) {
  TFM_REQUIRE_DATA("data/multi30k/train.en.gz");
  const auto dir = testing::data_dir() / "data/multi30k";
  TokenizerTrainOptions trainer;
  trainer.inputs = {(dir / "train.en.gz").string(), (dir / "train.de.gz").string()};
  trainer.vocab_size = 8000;
  const Tokenizer tokenizer = Tokenizer::from_serialized(train_tokenizer(trainer));
  const PreparedSplit split = testing::prepare_files((dir / "train.en.gz").string(), (dir / "train.de.gz").string(),
                                                     tokenizer, PrepareOptions{});
  BatchingOptions options;
  options.max_tokens = 4096;
  const Shard data = testing::as_shard(split.data, tokenizer.vocab_size());
  for (const int64_t epoch : {1, 2}) {
    const Batches batches = make_batches(data, options, epoch);
    expect_valid_batches(data, batches, options);
    const double efficiency = padding_efficiency(data, batches);
    EXPECT_GE(efficiency, 0.90);
    EXPECT_DOUBLE_EQ(batching_stats(data, options).padding_efficiency(), efficiency);
    std::cout << "[ info     ] Multi30k train: " << data.size() << " pairs, " << batches.size()
              << " batches of <= 4096 tokens, padding efficiency " << efficiency << " (epoch " << epoch << ")\n";
  }
}

}  // namespace
}  // namespace tfm
