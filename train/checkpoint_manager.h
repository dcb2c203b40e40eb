#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "train/checkpoint.h"

namespace tfm {

/// The checkpoint files of one save directory, with fairseq's names: checkpointN.pt at the end of
/// epoch N, checkpoint_E_U.pt at update U of epoch E, and the copies checkpoint_last.pt (what a
/// resume reads) and checkpoint_best.pt; checkpoint_avg.pt is the §6.1 average of the newest.
/// "Newest" is by the (epoch, update) each file records, never by file times, which a copy of the
/// directory (cp without -p, rsync, object storage) changes.
class CheckpointFiles {
 public:
  /// keep_last: numbered checkpoints kept (0: none written, only checkpoint_last.pt).
  CheckpointFiles(std::filesystem::path dir, int64_t keep_last);

  std::filesystem::path last() const { return dir_ / "checkpoint_last.pt"; }
  std::filesystem::path best() const { return dir_ / "checkpoint_best.pt"; }
  std::filesystem::path average() const { return dir_ / "checkpoint_avg.pt"; }

  /// Where a checkpoint at `progress` is written: a numbered name, or checkpoint_last.pt when
  /// none are kept. At an epoch end `progress` has moved on to the next epoch already.
  std::filesystem::path path_for(const TrainingProgress& progress, bool epoch_end) const;
  /// After `written` (at `progress`) was saved: copies it to checkpoint_last.pt (and
  /// checkpoint_best.pt when `is_best`), durably, and removes numbered ones past keep_last.
  void saved(const std::filesystem::path& written, const TrainingProgress& progress, bool is_best);
  /// The numbered checkpoints in the directory with a recorded position, newest first.
  std::vector<std::filesystem::path> numbered();
  /// §6.1: checkpoint_avg.pt, the mean of the newest `count` numbered checkpoints (none below 2).
  void write_average(int64_t count);

 private:
  using Position = std::pair<int64_t, int64_t>;  // (epoch, update) as recorded
  /// The recorded position of `file`: known when this process wrote it, read once otherwise;
  /// none (and a warning, once) for a file without readable training state.
  std::optional<Position> position_of(const std::filesystem::path& file);

  std::filesystem::path dir_;
  int64_t keep_last_;
  std::map<std::string, Position> positions_;  // by file name
  std::set<std::string> unreadable_;
};

}  // namespace tfm
