#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include <torch/optim/adam.h>
#include <torch/types.h>

#include "data/batch_prefetcher.h"
#include "dist/distributed_group.h"
#include "model/model_config.h"
#include "model/transformer.h"
#include "train/checkpoint.h"
#include "train/checkpoint_manager.h"
#include "train/progress_log.h"
#include "train/train_options.h"
#include "train/training_data.h"
#include "train/training_schedule.h"
#include "train/update_step.h"
#include "train/validator.h"

namespace tfm {

/// The paper's training recipe (§5): Adam(0.9, 0.98, 1e-9), the warmup schedule, label
/// smoothing, token-count batches with gradient accumulation; validation, checkpoints, resume.
/// The loop over epochs and updates; each job is a part of its own: the update step
/// (train/update_step.h), when to log, validate, save and stop (train/training_schedule.h), the
/// validator, the checkpoint files and the progress log.
class Trainer {
 public:
  /// Resumes from save_dir/checkpoint_last.pt when it exists (unless no_resume). With a `group`
  /// (data parallelism, one Trainer per rank), each rank trains on its share of every update's
  /// batches and the gradients are summed over the ranks before each step; rank 0 alone
  /// validates, logs and writes checkpoints. The group must outlive the Trainer.
  Trainer(const TrainOptions& options, const ModelConfig& config, TrainingData data, const torch::Device& device,
          DistributedGroup* group = nullptr);

  /// Trains until a stopping rule holds or `interrupted` becomes true; saves checkpoint_last.pt then.
  StopReason run(const std::atomic<bool>& interrupted);

  ValidationResult validate_model();
  Transformer& model() { return model_; }
  const TrainingProgress& progress() const { return progress_; }

 private:
  /// One epoch's updates, from where the progress stands; false when a stop was called for.
  bool train_epoch(BatchPrefetcher& prefetcher, const std::atomic<bool>& interrupted);
  /// Training seconds so far, sessions before a resume included.
  double elapsed_seconds() const;
  bool is_main() const { return group_ == nullptr || group_->is_main(); }
  void after_update(bool epoch_end);
  /// Saves a checkpoint, validating first when `validate` (and there is validation data).
  void validate_and_save(bool epoch_end, bool validate);
  void save(bool epoch_end, bool is_best);
  /// Why to stop now, if at all; with several ranks, the one answer they all act on.
  std::optional<StopReason> should_stop(const std::atomic<bool>& interrupted);
  /// The progress line, when one is due (or `force`d: an epoch's end, a pause, the stop).
  void log_progress(bool force);

  TrainOptions options_;
  ModelConfig config_;
  TrainingData data_;
  torch::Device device_;
  Transformer model_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  TrainingProgress progress_;
  DistributedGroup* group_ = nullptr;  // null: one process
  TrainingSchedule schedule_;
  CheckpointFiles checkpoints_;
  std::unique_ptr<UpdateStep> update_step_;
  std::unique_ptr<Validator> validator_;
  std::unique_ptr<ProgressLog> log_;
  double session_start_ = 0;  // steady-clock seconds when run() began
  double elapsed_at_start_ = 0;
  int64_t last_saved_update_ = -1;      // the update of the newest checkpoint
  bool last_save_epoch_end_ = false;    // whether that checkpoint was an epoch end's (its file name)
  int64_t last_validated_update_ = -1;  // the update of the newest validation
  std::vector<size_t> batch_counts_;    // batches of each training shard (the same every epoch)
  size_t epoch_batches_ = 0;            // batches in the current epoch
};

}  // namespace tfm
