#include "train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/batching.h"
#include "model/archive_file.h"
#include "model/model_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tests/train/train_test_support.h"

// A run stopped and extended continues exactly as one that never stopped: mid-epoch, mid-shard
// and after validating; and a damaged optimizer state is an error, never a silently other run.

namespace tfm {
namespace {

using testing::ToyTask;
using testing::validated_updates;

/// The checkpoint_last.pt of two runs hold the same parameters.
void expect_same_parameters(const std::string& save_dir, const std::string& other_save_dir) {
  const auto a = load_model_file(save_dir + "/checkpoint_last.pt", torch::kCPU);
  const auto b = load_model_file(other_save_dir + "/checkpoint_last.pt", torch::kCPU);
  const auto pa = a.model->named_parameters();
  const auto pb = b.model->named_parameters();
  for (const auto& item : pa) EXPECT_TENSOR_NEAR(pb[item.key()], item.value(), 1e-6) << item.key();
}

TEST(Trainer, ResumeContinuesExactly) {
  ToyTask straight_task;
  straight_task.options.max_updates = 16;
  {
    Trainer straight(straight_task.options, straight_task.config, straight_task.data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    straight.run(interrupted);
  }
  ToyTask split_task;
  split_task.options.max_updates = 7;  // stops mid-epoch
  {
    Trainer first_half(split_task.options, split_task.config, split_task.data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    first_half.run(interrupted);
  }
  torch::manual_seed(999);  // disturb the global generator: resuming must restore it
  split_task.options.max_updates = 16;
  Trainer second_half(split_task.options, split_task.config, split_task.data, torch::kCPU);
  EXPECT_EQ(second_half.progress().update, 7);
  std::atomic<bool> interrupted{false};
  second_half.run(interrupted);

  expect_same_parameters(straight_task.options.save_dir, split_task.options.save_dir);
}

/// `task`'s pairs as two shards of three pairs, one pair a batch: six batches an epoch, three a shard.
void split_into_shards(ToyTask& task) {
  ParallelDataset first, second;
  const auto& pairs = testing::kToyPairs;
  for (size_t i = 0; i < pairs.size(); ++i) {
    (i < 3 ? first : second)
        .append(task.data.tokenizer.encode(pairs[i].first), task.data.tokenizer.encode(pairs[i].second));
  }
  const int64_t vocab = task.data.tokenizer.vocab_size();
  task.data.train = {Shard::from_dataset(first, vocab, "shard 0"), Shard::from_dataset(second, vocab, "shard 1")};
  task.options.batching.max_sentences = 1;
}

TEST(Trainer, ResumeContinuesExactlyMidShard) {
  ToyTask straight_task;
  split_into_shards(straight_task);
  straight_task.options.max_updates = 10;
  {
    Trainer straight(straight_task.options, straight_task.config, straight_task.data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    straight.run(interrupted);
  }
  ToyTask split_task;
  split_into_shards(split_task);
  split_task.options.max_updates = 4;  // the second shard's first batch of epoch 1
  {
    Trainer first_half(split_task.options, split_task.config, split_task.data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    first_half.run(interrupted);
  }
  split_task.options.max_updates = 10;  // and on, to mid-way through epoch 2's second shard
  Trainer second_half(split_task.options, split_task.config, split_task.data, torch::kCPU);
  EXPECT_EQ(second_half.progress().batch_in_epoch, 4);
  std::atomic<bool> interrupted{false};
  second_half.run(interrupted);

  expect_same_parameters(straight_task.options.save_dir, split_task.options.save_dir);
}

/// The first tensor named `leaf` anywhere under `archive` (depth-first).
bool find_tensor(torch::serialize::InputArchive& archive, const std::string& leaf, torch::Tensor& found) {
  for (const auto& key : archive.keys()) {
    torch::serialize::InputArchive child;
    if (key == leaf && archive.try_read(key, found)) return true;
    if (archive.try_read(key, child) && find_tensor(child, leaf, found)) return true;
  }
  return false;
}

TEST(Trainer, ADamagedOptimizerStateIsAnErrorNotASilentlyDifferentRun) {
  ToyTask task;
  task.options.max_updates = 3;
  {
    Trainer trainer(task.options, task.config, task.data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    trainer.run(interrupted);
  }
  const std::string last = task.options.save_dir + "/checkpoint_last.pt";
  auto archive = open_archive(last, torch::kCPU);
  torch::serialize::InputArchive trainer_state;
  ASSERT_TRUE(archive.try_read("trainer", trainer_state));
  torch::Tensor moment;
  ASSERT_TRUE(find_tensor(trainer_state, "exp_avg_sq", moment));
  // Overwrite 8 bytes inside that moment, found by content, as the dd command would.
  const auto contiguous = moment.contiguous();
  ASSERT_TRUE(testing::overwrite_after_pattern(last, std::string(static_cast<const char*>(contiguous.data_ptr()), 32),
                                               8, std::string(8, '\x7f')));
  task.options.max_updates = 6;
  try {
    Trainer resumed(task.options, task.config, task.data, torch::kCPU);
    FAIL() << "resumed from a damaged optimizer state";
  } catch (const std::runtime_error& error) {
    // Every record of the archive, the optimizer's moments included, has its CRC-32 checked.
    EXPECT_NE(std::string(error.what()).find(last + ": damaged file (record archive/data/"), std::string::npos)
        << error.what();
  }
}

TEST(Trainer, ExtendingARunStoppedAfterValidatingContinuesExactly) {
  // A run stopped by --max-updates validates before its last save; the straight run does not
  // validate there. Validation draws from the default generator (the translator's model starts
  // from random weights), which must not change the dropout masks of the updates that follow.
  auto validated_task = [] {
    auto task = std::make_unique<ToyTask>();
    task->data.valid = task->data.train.front();
    task->options.validate_every = 1000;
    return task;
  };
  auto straight_task = validated_task();
  straight_task->options.max_updates = 8;
  {
    Trainer straight(straight_task->options, straight_task->config, straight_task->data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    straight.run(interrupted);
  }
  auto split_task = validated_task();
  split_task->options.max_updates = 4;
  {
    Trainer first_half(split_task->options, split_task->config, split_task->data, torch::kCPU);
    std::atomic<bool> interrupted{false};
    first_half.run(interrupted);
  }
  ASSERT_EQ(validated_updates(split_task->options.save_dir), (std::vector<int64_t>{4}));
  split_task->options.max_updates = 8;
  Trainer second_half(split_task->options, split_task->config, split_task->data, torch::kCPU);
  std::atomic<bool> interrupted{false};
  second_half.run(interrupted);

  expect_same_parameters(straight_task->options.save_dir, split_task->options.save_dir);
}

}  // namespace
}  // namespace tfm
