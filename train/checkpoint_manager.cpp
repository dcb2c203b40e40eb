#include "train/checkpoint_manager.h"

#include <algorithm>
#include <regex>

#include <spdlog/spdlog.h>

#include "runtime/durable_file.h"

namespace fs = std::filesystem;

namespace tfm {

CheckpointFiles::CheckpointFiles(fs::path dir, int64_t keep_last) : dir_(std::move(dir)), keep_last_(keep_last) {}

fs::path CheckpointFiles::path_for(const TrainingProgress& progress, bool epoch_end) const {
  if (keep_last_ <= 0) return last();
  return dir_ / (epoch_end ? "checkpoint" + std::to_string(progress.epoch - 1) + ".pt"
                           : "checkpoint_" + std::to_string(progress.epoch) + "_" + std::to_string(progress.update) +
                                 ".pt");
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

}  // namespace tfm
