#include "train/training_schedule.h"

#include <algorithm>

#include "text/option_names.h"

namespace tfm {

std::string describe(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxEpochs: return "reached " + option_name("max_epochs");
    case StopReason::kMaxUpdates: return "reached " + option_name("max_updates");
    case StopReason::kTimeLimit: return "reached " + option_name("time_limit");
    case StopReason::kPatience: return "no validation improvement for " + option_name("patience") + " validations";
    case StopReason::kInterrupted: return "interrupted";
  }
  return "?";
}

TrainingSchedule::TrainingSchedule(const TrainOptions& options) : options_(options) {}

bool TrainingSchedule::validation_due(int64_t update) const {
  return options_.validate_every > 0 && update % options_.validate_every == 0;
}

CheckpointAction TrainingSchedule::after_update(int64_t update) const {
  const bool validate = validation_due(update);
  const bool save = options_.save_interval_updates > 0 && update % options_.save_interval_updates == 0;
  if (!validate && !save) return {};
  return {true, validate || options_.validate_every == 0};
}

CheckpointAction TrainingSchedule::at_epoch_end(int64_t update) const {
  return {true, options_.validate_every == 0 || validation_due(update)};
}

CheckpointAction TrainingSchedule::at_stop(int64_t update, int64_t last_saved_update,
                                           int64_t last_validated_update) const {
  if (update == last_saved_update && update == last_validated_update) return {};
  return {true, true};
}

bool TrainingSchedule::log_due(int64_t update, double seconds_since_last_line, bool terminal) const {
  return terminal ? seconds_since_last_line >= 1.0 : update % options_.log_interval == 0;
}

std::optional<StopReason> TrainingSchedule::stop_reason(const TrainingProgress& progress, double elapsed_seconds,
                                                        bool interrupted) const {
  if (interrupted) return StopReason::kInterrupted;
  if (options_.max_updates > 0 && progress.update >= options_.max_updates) return StopReason::kMaxUpdates;
  if (options_.max_epochs > 0 && progress.epoch > options_.max_epochs) return StopReason::kMaxEpochs;
  if (options_.time_limit_minutes > 0 && elapsed_seconds >= options_.time_limit_minutes * 60) {
    return StopReason::kTimeLimit;
  }
  if (options_.patience > 0 && progress.validations_without_improvement >= options_.patience) {
    return StopReason::kPatience;
  }
  return std::nullopt;
}

double TrainingSchedule::budget_used(const TrainingProgress& progress, double elapsed_seconds,
                                     size_t epoch_batches) const {
  double used = 0;
  if (options_.max_updates > 0) {
    used = std::max(used, static_cast<double>(progress.update) / static_cast<double>(options_.max_updates));
  }
  if (options_.time_limit_minutes > 0) used = std::max(used, elapsed_seconds / (options_.time_limit_minutes * 60));
  if (options_.max_epochs > 0 && epoch_batches > 0) {
    const double epochs = static_cast<double>(progress.epoch - 1) +
                          static_cast<double>(progress.batch_in_epoch) / static_cast<double>(epoch_batches);
    used = std::max(used, epochs / static_cast<double>(options_.max_epochs));
  }
  return std::min(used, 1.0);
}

std::optional<double> TrainingSchedule::minutes_left(int64_t update, double elapsed_seconds) const {
  if (options_.max_updates > 0 && update > 0) {
    return elapsed_seconds / static_cast<double>(update) * static_cast<double>(options_.max_updates - update) / 60;
  }
  if (options_.time_limit_minutes > 0) return std::max(0.0, options_.time_limit_minutes - elapsed_seconds / 60);
  return std::nullopt;
}

}  // namespace tfm
