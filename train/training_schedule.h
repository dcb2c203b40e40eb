#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "train/checkpoint.h"
#include "train/train_options.h"

namespace tfm {

enum class StopReason { kMaxEpochs, kMaxUpdates, kTimeLimit, kPatience, kInterrupted };
std::string describe(StopReason reason);

/// What to do at a point of the run: write a checkpoint, validating first or not.
struct CheckpointAction {
  bool save = false;
  bool validate = false;
};

/// When to log, validate, save and stop (Marian's Scheduler): pure logic over the options,
/// the progress counters and times, with no model, data or clock of its own.
class TrainingSchedule {
 public:
  explicit TrainingSchedule(const TrainOptions& options);

  /// After an update that did not end an epoch: --validate-every and --save-interval-updates.
  /// With --validate-every, validation keeps its own interval and the saves in between only
  /// save; without it, every save validates.
  CheckpointAction after_update(int64_t update) const;
  /// At an epoch end (after update `update`): always a checkpoint, validated as above.
  CheckpointAction at_epoch_end(int64_t update) const;
  /// At the stop (not an interruption): the last checkpoint is always validated, for
  /// checkpoint_best and the curve's last point, unless this update was saved and validated.
  CheckpointAction at_stop(int64_t update, int64_t last_saved_update, int64_t last_validated_update) const;

  /// Whether a progress line is due: every --log-interval updates, or each second on a terminal.
  bool log_due(int64_t update, double seconds_since_last_line, bool terminal) const;
  /// Why to stop now, if at all.
  std::optional<StopReason> stop_reason(const TrainingProgress& progress, double elapsed_seconds,
                                        bool interrupted) const;
  /// The fraction (0..1) of --time-limit, --max-updates or --max-epochs used: the largest.
  double budget_used(const TrainingProgress& progress, double elapsed_seconds, size_t epoch_batches) const;
  /// Minutes left by --max-updates (at this rate) or --time-limit; none without either.
  std::optional<double> minutes_left(int64_t update, double elapsed_seconds) const;

 private:
  bool validation_due(int64_t update) const;
  TrainOptions options_;
};

}  // namespace tfm
