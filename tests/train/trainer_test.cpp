#include "train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "decode/translator.h"
#include "model/model_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tokenizer/tokenizer_trainer.h"
#include "train/checkpoint_average.h"
#include "train/lr_schedule.h"

namespace tfm {
namespace {

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

/// A handful of pairs, a tokenizer over them and a tiny model config.
const std::vector<std::pair<std::string, std::string>> kToyPairs = {
    {"one cat", "eine Katze"}, {"two cats", "zwei Katzen"}, {"one dog", "ein Hund"},
    {"two dogs", "zwei Hunde"}, {"three cats", "drei Katzen"}, {"three dogs", "drei Hunde"}};

Tokenizer toy_tokenizer(const testing::TempDir& dir) {
  std::string text;
  for (int repeat = 0; repeat < 20; ++repeat)
    for (const auto& [en, de] : kToyPairs) text += en + "\n" + de + "\n";
  testing::write_text(dir / "corpus.txt", text);
  TokenizerTrainOptions options;
  options.inputs = {(dir / "corpus.txt").string()};
  options.vocab_size = 30;
  return Tokenizer::from_serialized(train_tokenizer(options));
}

/// A handful of pairs, a tokenizer over them and a tiny model config.
struct ToyTask {
  ToyTask() : data{toy_tokenizer(dir), {}, std::nullopt} {
    for (const auto& [en, de] : kToyPairs) {
      data.train.append(data.tokenizer.encode(en), data.tokenizer.encode(de));
      sources.push_back(en);
      targets.push_back(de);
    }
    config.vocab_size = data.tokenizer.vocab_size();
    config.d_model = 32;
    config.d_ff = 64;
    config.heads = 2;
    config.encoder_layers = 1;
    config.decoder_layers = 1;
    options.train_src = "toy";
    options.save_dir = (dir / "run").string();
    options.batching.max_tokens = 12;  // a few pairs per batch: several batches per epoch
    options.lr.kind = "inverse_sqrt";
    options.lr.peak_lr = 3e-3;
    options.lr.warmup = 20;
    options.lr.d_model = 32;
    options.keep_last = 0;
    options.log_interval = 1000;
  }
  testing::TempDir dir;
  TrainingData data;
  std::vector<std::string> sources, targets;
  ModelConfig config;
  TrainOptions options;
};

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

  const auto a = load_model_file(straight_task.options.save_dir + "/checkpoint_last.pt", torch::kCPU);
  const auto b = load_model_file(split_task.options.save_dir + "/checkpoint_last.pt", torch::kCPU);
  const auto pa = a.model->named_parameters();
  const auto pb = b.model->named_parameters();
  for (const auto& item : pa) EXPECT_TENSOR_NEAR(pb[item.key()], item.value(), 1e-6) << item.key();
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
  ASSERT_TRUE(testing::overwrite_after_pattern(
      last, std::string(static_cast<const char*>(contiguous.data_ptr()), 32), 8, std::string(8, '\x7f')));
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

TEST(Trainer, InterruptSavesCheckpointLast) {
  ToyTask task;
  task.options.max_updates = 1000;
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{true};
  EXPECT_EQ(trainer.run(interrupted), StopReason::kInterrupted);
  EXPECT_TRUE(std::filesystem::exists(task.options.save_dir + "/checkpoint_last.pt"));
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
