#include "train/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>

#include "model/model_file.h"
#include "tests/train/train_test_support.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

TrainingProgress at(int64_t epoch, int64_t update) {
  TrainingProgress progress;
  progress.epoch = epoch;
  progress.update = update;
  return progress;
}

/// Writes a checkpoint of a tiny model at `progress` where `files` names it, and tells `files`.
void save_at(CheckpointFiles& files, testing::ToyTask& task, const TrainingProgress& progress, bool epoch_end,
             bool is_best = false) {
  torch::manual_seed(static_cast<uint64_t>(progress.update));
  Transformer model(task.config);
  torch::optim::Adam optimizer(model->parameters());
  const fs::path path = files.path_for(progress, epoch_end);
  save_checkpoint(path.string(), model, task.data.tokenizer.serialized(), optimizer, progress,
                  nlohmann::json::object());
  files.saved(path, progress, is_best);
}

std::vector<std::string> names(const std::vector<fs::path>& paths) {
  std::vector<std::string> out;
  for (const auto& path : paths) out.push_back(path.filename().string());
  return out;
}

TEST(CheckpointFiles, FairseqNamesAndLastAndBestCopies) {
  testing::ToyTask task;
  fs::create_directories(task.options.save_dir);
  CheckpointFiles files(task.options.save_dir, 5);
  EXPECT_EQ(files.path_for(at(2, 300), false).filename(), "checkpoint_2_300.pt");
  EXPECT_EQ(files.path_for(at(3, 310), true).filename(), "checkpoint2.pt");  // the epoch just finished
  EXPECT_EQ(CheckpointFiles(task.options.save_dir, 0).path_for(at(3, 310), false), files.last());
  save_at(files, task, at(1, 4), false, true);
  save_at(files, task, at(2, 6), true);
  EXPECT_EQ(read_recorded_progress(files.last().string()).update, 6);
  EXPECT_EQ(read_recorded_progress(files.best().string()).update, 4);
  EXPECT_EQ(names(files.numbered()), (std::vector<std::string>{"checkpoint1.pt", "checkpoint_1_4.pt"}));
}

TEST(CheckpointFiles, KeepsTheNewestByRecordedProgressAndLeavesForeignFilesAlone) {
  testing::ToyTask task;
  fs::create_directories(task.options.save_dir);
  // A model file without training state under a checkpoint's name: not ordered, rotated or averaged.
  torch::manual_seed(1);
  Transformer model(task.config);
  save_model_file(task.options.save_dir + "/checkpoint_9_999.pt", model, task.data.tokenizer.serialized());
  {
    CheckpointFiles files(task.options.save_dir, 2);
    save_at(files, task, at(1, 10), false);
    save_at(files, task, at(1, 20), false);
  }
  // Another process (a resume) sees file times that say nothing: the copies made them all alike.
  const auto now = fs::file_time_type::clock::now();
  for (const auto& entry : fs::directory_iterator(task.options.save_dir)) fs::last_write_time(entry.path(), now);
  CheckpointFiles resumed(task.options.save_dir, 2);
  save_at(resumed, task, at(2, 30), false);
  EXPECT_EQ(names(resumed.numbered()), (std::vector<std::string>{"checkpoint_2_30.pt", "checkpoint_1_20.pt"}));
  EXPECT_TRUE(fs::exists(task.options.save_dir + "/checkpoint_9_999.pt"));
  resumed.write_average(2);
  const auto average = load_model_file(resumed.average().string(), torch::kCPU);
  const auto a = load_model_file(task.options.save_dir + "/checkpoint_2_30.pt", torch::kCPU);
  const auto b = load_model_file(task.options.save_dir + "/checkpoint_1_20.pt", torch::kCPU);
  EXPECT_TRUE(torch::allclose(average.model->parameters()[0], (a.model->parameters()[0] + b.model->parameters()[0]) / 2,
                              1e-6, 1e-7));
}

}  // namespace
}  // namespace tfm
