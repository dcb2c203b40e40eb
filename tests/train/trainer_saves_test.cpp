#include "train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/batching.h"
#include "model/model_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tests/train/train_test_support.h"
#include "train/checkpoint.h"
#include "train/checkpoint_average.h"

// When a run validates, and which checkpoint files it writes, keeps and averages.

namespace tfm {
namespace {

using testing::ToyTask;
using testing::validated_updates;

/// Numbered checkpoint files in a save directory, sorted by name.
std::vector<std::string> numbered_files(const std::string& save_dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(save_dir)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("checkpoint", 0) == 0 && name != "checkpoint_last.pt" && name != "checkpoint_best.pt" &&
        name != "checkpoint_avg.pt") {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Trains `task` until it stops, validating on its own training pairs.
void train_validating(ToyTask& task) {
  task.data.valid = task.data.train[0];
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{false};
  trainer.run(interrupted);
}

/// Batches in the first epoch of `task`'s training pairs.
int64_t first_epoch_batches(const ToyTask& task) {
  return static_cast<int64_t>(make_batches(task.data.train[0], task.options.batching, 1).size());
}

TEST(Trainer, ValidateEveryKeepsItsOwnIntervalAndTheLastCheckpointIsValidated) {
  ToyTask task;
  task.options.keep_last = 100;
  task.options.average_last = 0;
  task.options.save_interval_updates = 2;
  task.options.validate_every = 4;
  task.options.max_updates = 11;
  const int64_t batches_per_epoch = first_epoch_batches(task);
  ASSERT_GT(batches_per_epoch, 2);  // epoch ends fall between validations
  train_validating(task);
  // Every 4 updates and the last one (11); not at the saves every 2 updates nor at epoch ends.
  EXPECT_EQ(validated_updates(task.options.save_dir), (std::vector<int64_t>{4, 8, 11}));
  // An update due for validation that is also an epoch end is validated there.
  ToyTask epoch_interval;
  epoch_interval.options.validate_every = batches_per_epoch;
  epoch_interval.options.max_updates = batches_per_epoch + 1;
  train_validating(epoch_interval);
  EXPECT_EQ(validated_updates(epoch_interval.options.save_dir),
            (std::vector<int64_t>{batches_per_epoch, batches_per_epoch + 1}));
  // Without --validate-every, every save validates (each epoch end and every 2 updates).
  ToyTask every_save;
  every_save.options.save_interval_updates = 2;
  every_save.options.max_updates = 5;
  train_validating(every_save);
  std::vector<int64_t> epoch_ends;
  for (int64_t epoch = 1, end = 0; end < 5; ++epoch) {
    end += static_cast<int64_t>(make_batches(every_save.data.train[0], every_save.options.batching, epoch).size());
    epoch_ends.push_back(end);
  }
  std::vector<int64_t> expected;
  for (int64_t update = 1; update <= 5; ++update) {
    const bool epoch_end = std::find(epoch_ends.begin(), epoch_ends.end(), update) != epoch_ends.end();
    if (update % 2 == 0 || epoch_end || update == 5) expected.push_back(update);
  }
  EXPECT_EQ(validated_updates(every_save.options.save_dir), expected);
}

TEST(Trainer, AStopRightAfterAnUnvalidatedEpochEndValidatesItWithoutASecondFile) {
  ToyTask task;
  task.options.keep_last = 100;
  task.options.average_last = 0;
  task.options.validate_every = 1000;
  const int64_t batches_per_epoch = first_epoch_batches(task);
  task.options.max_updates = batches_per_epoch;  // stops exactly at the first epoch end
  train_validating(task);
  EXPECT_EQ(validated_updates(task.options.save_dir), (std::vector<int64_t>{batches_per_epoch}));
  // One checkpoint for that update, under the epoch end's name: averaging must not count it twice.
  EXPECT_EQ(numbered_files(task.options.save_dir), (std::vector<std::string>{"checkpoint1.pt"}));
  EXPECT_TRUE(std::filesystem::exists(task.options.save_dir + "/checkpoint_best.pt"));
}

/// The numbered checkpoints of a save directory with the update each records, oldest first.
std::vector<std::pair<int64_t, std::string>> recorded_updates(const std::string& save_dir) {
  std::vector<std::pair<int64_t, std::string>> files;
  for (const auto& name : numbered_files(save_dir)) {
    files.emplace_back(read_recorded_progress(save_dir + "/" + name).update, name);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Trainer, RotationAndAveragingFollowTheRecordedProgressNotFileTimes) {
  ToyTask task;
  task.options.keep_last = 3;
  task.options.average_last = 2;
  task.options.save_interval_updates = 1;
  task.options.max_updates = 4;
  train_validating(task);
  // A copied save directory: file times no longer follow the updates (here, the reverse of them).
  const auto before = recorded_updates(task.options.save_dir);
  ASSERT_EQ(before.size(), 3U);
  const auto now = std::filesystem::file_time_type::clock::now();
  for (size_t i = 0; i < before.size(); ++i) {
    std::filesystem::last_write_time(task.options.save_dir + "/" + before[i].second,
                                     now + std::chrono::hours(before.size() - i));
  }
  task.options.max_updates = 7;  // resumed: three more saves
  train_validating(task);
  const auto after = recorded_updates(task.options.save_dir);
  std::vector<int64_t> kept;
  for (const auto& file : after) kept.push_back(file.first);
  EXPECT_EQ(kept, (std::vector<int64_t>{5, 6, 7})) << "rotation kept other checkpoints than the newest three";
  // checkpoint_avg.pt is the mean of the two newest by progress.
  const auto expected = average_checkpoints(
      {task.options.save_dir + "/" + after[1].second, task.options.save_dir + "/" + after[2].second});
  const auto written = load_model_file(task.options.save_dir + "/checkpoint_avg.pt", torch::kCPU);
  auto expected_parameters = expected.model->named_parameters();
  for (const auto& item : written.model->named_parameters()) {
    EXPECT_TENSOR_NEAR(item.value(), expected_parameters[item.key()], 0) << item.key();
  }
}

}  // namespace
}  // namespace tfm
