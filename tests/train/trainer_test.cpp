#include "train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "model/model_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tests/train/train_test_support.h"
#include "translation/translator.h"

// A run from start to stop: it learns, stops on divergence and on interrupt, anneals, and refuses
// bad settings. Resuming: trainer_resume_test.cpp; validation and checkpoint files:
// trainer_saves_test.cpp.

namespace tfm {
namespace {

using testing::ToyTask;

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

TEST(Trainer, InterruptSavesCheckpointLast) {
  ToyTask task;
  task.options.max_updates = 1000;
  Trainer trainer(task.options, task.config, task.data, torch::kCPU);
  std::atomic<bool> interrupted{true};
  EXPECT_EQ(trainer.run(interrupted), StopReason::kInterrupted);
  EXPECT_TRUE(std::filesystem::exists(task.options.save_dir + "/checkpoint_last.pt"));
}

}  // namespace
}  // namespace tfm
