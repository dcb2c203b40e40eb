#include "train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "data/batching.h"
#include "model/archive_file.h"
#include "model/model_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tests/train/train_test_support.h"
#include "tokenizer/tokenizer_trainer.h"
#include "train/checkpoint.h"
#include "train/checkpoint_average.h"
#include "train/lr_schedule.h"
#include "translation/translator.h"

namespace tfm {
namespace {

using testing::ToyTask;

TEST(LrSchedule, NoamEqualsThePapersFormula) {
  LrScheduleOptions options;  // d_model 512, warmup 4000, factor 1
  // lr = 512^-0.5 * min(step^-0.5, step * 4000^-1.5)
  EXPECT_NEAR(learning_rate(options, 1), 0.04419417 * 1 * std::pow(4000.0, -1.5), 1e-12);
  EXPECT_NEAR(learning_rate(options, 4000), 0.04419417 * 0.01581139, 1e-9);  // the peak: 6.988e-4
  EXPECT_NEAR(learning_rate(options, 16000), 0.04419417 / 126.4911064, 1e-9);
  EXPECT_LT(learning_rate(options, 3999), learning_rate(options, 4000));
  EXPECT_GT(learning_rate(options, 4000), learning_rate(options, 4001));
  options.factor = 2.0;
  EXPECT_NEAR(learning_rate(options, 4000), 2 * 0.04419417 * 0.01581139, 1e-9);
}

TEST(LrSchedule, InverseSqrt) {
  LrScheduleOptions options;
  options.kind = "inverse_sqrt";
  options.peak_lr = 1e-3;
  options.warmup = 100;
  EXPECT_NEAR(learning_rate(options, 50), 5e-4, 1e-12);
  EXPECT_NEAR(learning_rate(options, 100), 1e-3, 1e-12);
  EXPECT_NEAR(learning_rate(options, 400), 5e-4, 1e-12);
  options.kind = "cosine";
  EXPECT_THROW(validate(options), std::invalid_argument);
}

TEST(LrSchedule, CooldownFallsLinearlyToZeroOverTheEndOfTheBudget) {
  for (const char* kind : {"inverse_sqrt", "noam"}) {
    LrScheduleOptions options;
    options.kind = kind;
    options.peak_lr = 1e-3;
    options.warmup = 100;
    LrScheduleOptions plain = options;
    options.cooldown = 0.2;
    // Untouched until the last fifth of the budget; then (1 - used) / 0.2 of the plain rate.
    EXPECT_DOUBLE_EQ(learning_rate(options, 50, 0.3), learning_rate(plain, 50)) << kind;
    EXPECT_DOUBLE_EQ(learning_rate(options, 400, 0.8), learning_rate(plain, 400)) << kind;
    EXPECT_NEAR(learning_rate(options, 400, 0.9), 0.5 * learning_rate(plain, 400), 1e-15) << kind;
    EXPECT_NEAR(learning_rate(options, 400, 0.95), 0.25 * learning_rate(plain, 400), 1e-15) << kind;
    EXPECT_EQ(learning_rate(options, 400, 1.0), 0.0) << kind;
    validate(options);
  }
  LrScheduleOptions options;
  options.cooldown = 1.5;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.cooldown = -0.1;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = LrScheduleOptions();
  options.factor = std::numeric_limits<double>::infinity();
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = LrScheduleOptions();
  options.peak_lr = std::nan("");
  EXPECT_THROW(validate(options), std::invalid_argument);
}

TEST(Trainer, TinyModelOverfitsAHandfulOfPairs) {
  ToyTask task;
  task.options.max_updates = 300;
  task.config.dropout = 0.0;
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{false};
  EXPECT_EQ(trainer.run(interrupted), StopReason::kMaxUpdates);
  // Loss on the training pairs (label smoothing 0.1 keeps it above zero) and greedy outputs.
  auto checkpoint = load_model_file(task.options.save_dir + "/checkpoint_last.pt", torch::kCPU);
  TranslatorOptions greedy;
  greedy.search.beam = 1;
  Translator translator({checkpoint.model}, task.data.tokenizer, greedy, torch::kCPU);
  const auto outputs = translator.translate(task.sources);
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(outputs[i].text(), task.targets[i]) << task.sources[i];
}

TEST(Trainer, ADivergedRunStopsBeforeItsNaNReachesTheWeightsOrACheckpoint) {
  // A step of ~1e30 makes every product overflow at the next update: its loss is NaN. The run
  // stops there, naming it, and the last checkpoint (written after every update) is still finite.
  ToyTask task;
  task.options.dtype = "float32";
  task.options.max_updates = 50;
  task.options.save_interval_updates = 1;
  task.options.lr.peak_lr = 1e30;
  task.options.lr.warmup = 1;
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{false};
  try {
    trainer.run(interrupted);
    ADD_FAILURE() << "50 updates at a learning rate of 1e30 did not diverge";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("training diverged"), std::string::npos) << error.what();
  }
  auto checkpoint = load_model_file(task.options.save_dir + "/checkpoint_last.pt", torch::kCPU);
  for (const auto& parameter : checkpoint.model->parameters()) {
    EXPECT_TRUE(torch::isfinite(parameter).all().item<bool>());
  }
}

TEST(Trainer, CooldownSpendsTheLastPartOfMaxUpdatesAnnealingToZero) {
  ToyTask task;
  task.options.max_updates = 20;
  task.options.lr.cooldown = 0.5;
  task.options.log_interval = 1;  // a metrics record, with its rate, for every update
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{false};
  ASSERT_EQ(trainer.run(interrupted), StopReason::kMaxUpdates);
  std::ifstream metrics(task.options.save_dir + "/metrics.jsonl");
  int64_t checked = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("type") != "train") continue;
    // Update u is taken (u - 1) / 20 of the way through the budget: full rate up to update 11,
    // then down by a tenth per update to a tenth of it at update 20.
    const int64_t update = record.at("update").get<int64_t>();
    const double used = static_cast<double>(update - 1) / 20;
    EXPECT_NEAR(record.at("lr").get<double>(), learning_rate(task.options.lr, update, used), 1e-15) << update;
    if (update == 20) {
      EXPECT_NEAR(record.at("lr").get<double>(), 0.1 * 3e-3, 1e-15);  // a tenth of the peak, reached at update 20
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);  // 20 off a terminal (ctest); on one, a line a second
}

TEST(Trainer, ACooldownWithoutABudgetIsAnError) {
  ToyTask task;
  task.options.lr.cooldown = 0.2;
  EXPECT_THROW(validate(task.options), std::invalid_argument);
  task.options.time_limit_minutes = 1;
  EXPECT_NO_THROW(validate(task.options));
}

TEST(Trainer, AdamSettingsOutsideTheirRangeAreErrorsNamingThem) {
  // LibTorch's own checks would say "Invalid beta parameter at index 0" once training had begun.
  const double nan = std::nan("");
  for (const auto& [key, value] :
       {std::pair{"adam_beta1", 1.0}, std::pair{"adam_beta1", -0.1}, std::pair{"adam_beta2", nan},
        std::pair{"adam_eps", -1e-9}, std::pair{"adam_eps", std::numeric_limits<double>::infinity()}}) {
    ToyTask task;
    if (std::string(key) == "adam_beta1") task.options.adam_beta1 = value;
    if (std::string(key) == "adam_beta2") task.options.adam_beta2 = value;
    if (std::string(key) == "adam_eps") task.options.adam_eps = value;
    try {
      validate(task.options);
      ADD_FAILURE() << key << " " << value << " accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(key), std::string::npos) << error.what();
    }
  }
  ToyTask task;
  task.options.adam_beta1 = 0.0;
  task.options.adam_eps = 0.0;
  EXPECT_NO_THROW(validate(task.options));
}

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

/// The updates at which metrics.jsonl records a validation.
std::vector<int64_t> validated_updates(const std::string& save_dir) {
  std::ifstream metrics(save_dir + "/metrics.jsonl");
  std::vector<int64_t> updates;
  for (std::string line; std::getline(metrics, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("type") == "valid") updates.push_back(record.at("update").get<int64_t>());
  }
  return updates;
}

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

TEST(Trainer, InterruptSavesCheckpointLast) {
  ToyTask task;
  task.options.max_updates = 1000;
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{true};
  EXPECT_EQ(trainer.run(interrupted), StopReason::kInterrupted);
  EXPECT_TRUE(std::filesystem::exists(task.options.save_dir + "/checkpoint_last.pt"));
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

TEST(CheckpointAverage, EqualsTheElementWiseMean) {
  ToyTask task;
  testing::TempDir dir;
  torch::manual_seed(1);
  Transformer a(task.config);
  torch::manual_seed(2);
  Transformer b(task.config);
  save_model_file((dir / "a.pt").string(), a, task.data.tokenizer.serialized());
  save_model_file((dir / "b.pt").string(), b, task.data.tokenizer.serialized());
  const auto averaged = average_checkpoints({(dir / "a.pt").string(), (dir / "b.pt").string()});
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  for (const auto& item : averaged.model->named_parameters()) {
    EXPECT_TENSOR_NEAR(item.value(), (pa[item.key()] + pb[item.key()]) / 2, 1e-7) << item.key();
  }
  auto other = task.config;
  other.d_ff = 128;
  Transformer c(other);
  save_model_file((dir / "c.pt").string(), c, task.data.tokenizer.serialized());
  EXPECT_THROW(average_checkpoints({(dir / "a.pt").string(), (dir / "c.pt").string()}), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
