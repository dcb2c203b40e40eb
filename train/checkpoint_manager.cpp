#include "train/checkpoint_manager.h"

#include <algorithm>
#include <regex>

#include <spdlog/spdlog.h>

#include "model/model_file.h"
#include "runtime/durable_file.h"
#include "train/checkpoint_average.h"

namespace fs = std::filesystem;

namespace tfm {

CheckpointFiles::CheckpointFiles(fs::path dir, int64_t keep_last) : dir_(std::move(dir)), keep_last_(keep_last) {}

fs::path CheckpointFiles::path_for(const TrainingProgress& progress, bool epoch_end) const {
  if (keep_last_ <= 0) return last();
  return dir_ / (epoch_end
                     ? "checkpoint" + std::to_string(progress.epoch - 1) + ".pt"
                     : "checkpoint_" + std::to_string(progress.epoch) + "_" + std::to_string(progress.update) + ".pt");
}

void CheckpointFiles::saved(const fs::path& written, const TrainingProgress& progress, bool is_best) {
  if (written != last()) {
    positions_[written.filename().string()] = {progress.epoch, progress.update};
    copy_file_durably(written.string(), last().string());
  }
  if (is_best) copy_file_durably(written.string(), best().string());
  const auto files = numbered();
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep_last_, 0)); i < files.size(); ++i) {
    fs::remove(files[i]);
    positions_.erase(files[i].filename().string());
  }
}

std::optional<CheckpointFiles::Position> CheckpointFiles::position_of(const fs::path& file) {
  const std::string name = file.filename().string();
  if (const auto known = positions_.find(name); known != positions_.end()) return known->second;
  try {
    const TrainingProgress recorded = read_recorded_progress(file.string());
    return positions_[name] = {recorded.epoch, recorded.update};
  } catch (const std::exception& error) {
    // Not ours to order, rotate or average (say, a model file copied in under that name): left alone.
    if (unreadable_.insert(name).second) spdlog::warn("{}; left out of rotation and averaging", error.what());
    return std::nullopt;
  }
}

std::vector<fs::path> CheckpointFiles::numbered() {
  static const std::regex kNumbered(R"(checkpoint(\d+|_\d+_\d+)\.pt)");
  std::vector<std::pair<Position, fs::path>> files;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (!std::regex_match(entry.path().filename().string(), kNumbered)) continue;
    if (const auto position = position_of(entry.path())) files.emplace_back(*position, entry.path());
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> newest_first;
  for (auto& [position, path] : files) newest_first.push_back(std::move(path));
  return newest_first;
}

void CheckpointFiles::write_average(int64_t count) {
  if (count < 2) return;
  auto files = numbered();
  if (files.size() > static_cast<size_t>(count)) files.resize(static_cast<size_t>(count));
  if (files.size() < 2) {
    spdlog::info("no checkpoint_avg.pt: {} numbered checkpoint{} kept, averaging needs two", files.size(),
                 files.size() == 1 ? "" : "s");
    return;
  }
  std::vector<std::string> paths;
  std::string names;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {  // oldest first, as `tfm average` lists them
    paths.push_back(it->string());
    if (!names.empty()) names += ' ';
    names += it->filename().string();
  }
  auto averaged = average_checkpoints(paths);
  save_model_file(average().string(), averaged.model, averaged.tokenizer_proto);  // durably: a crash keeps the old
  spdlog::info("{}: the average of the last {} checkpoints ({}): the model to translate with", average().string(),
               paths.size(), names);
}

}  // namespace tfm
