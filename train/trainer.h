#pragma once
#include <vector>
#include <filesystem>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include <torch/optim/adam.h>
#include <torch/types.h>

#include "data/batch_prefetcher.h"
#include "data/parallel_dataset.h"
#include "dist/distributed_group.h"
#include "dist/gradient_buckets.h"
#include "model/model_config.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/checkpoint_manager.h"
#include "train/train_options.h"

namespace tfm {

/// What training reads: the tokenizer the ids come from and the tokenized splits.
struct TrainingData {
  Tokenizer tokenizer;
  ParallelDataset train;
  std::optional<ParallelDataset> valid;
};

/// Validation results: loss and perplexity per target token, and BLEU of the decoded split.
struct ValidationResult {
  double loss = 0, nll = 0, ppl = 0;
  double bleu = std::numeric_limits<double>::quiet_NaN();
  int64_t sentences = 0;
};

enum class StopReason { kMaxEpochs, kMaxUpdates, kTimeLimit, kPatience, kInterrupted };
const char* describe(StopReason reason);

/// The paper's training recipe (§5): Adam(0.9, 0.98, 1e-9), the warmup schedule, label
/// smoothing, token-count batches with gradient accumulation; validation, checkpoints, resume.
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
  void train_update(BatchPrefetcher& batches, size_t count);
  /// Data parallelism: sums gradients and this update's loss and token counts over the ranks.
  void all_reduce_update(torch::Tensor& loss, torch::Tensor& nll, int64_t& target_tokens, int64_t& all_tokens,
                         double& budget_used);
  /// Training seconds so far, sessions before a resume included.
  double elapsed_seconds() const;
  /// The fraction (0..1) of --time-limit, --max-updates or --max-epochs used so far: the largest.
  double budget_used() const;
  /// Data parallelism, at the start: checks that every rank loaded the same data and checkpoint,
  /// then gives every rank rank 0's parameters.
  void join_ranks();
  /// Data parallelism: throws unless the parameters are bit-identical on every rank.
  void verify_replicas();
  bool is_main() const { return group_ == nullptr || group_->is_main(); }
  void after_update(bool epoch_end);
  /// Saves a checkpoint, validating first when `validate` (and there is validation data).
  void validate_and_save(bool epoch_end, bool validate);
  /// Whether a save validates too: with --validate-every, validation keeps its own interval and
  /// the saves in between (epoch ends, --save-interval-updates) only save; without it, every save validates.
  bool saves_validate() const { return options_.validate_every == 0; }
  /// With --validate-every: whether this update is one to validate at.
  bool validation_due() const { return options_.validate_every > 0 && progress_.update % options_.validate_every == 0; }
  void save(bool epoch_end, bool is_best);
  /// §6.1: checkpoint_avg.pt, the mean of the last --average-last kept checkpoints.
  void write_average();
  /// Why to stop now, if at all; with several ranks, the one answer they all act on.
  std::optional<StopReason> should_stop(const std::atomic<bool>& interrupted);
  std::optional<StopReason> local_stop_reason(const std::atomic<bool>& interrupted) const;
  void log_progress(bool force);

  TrainOptions options_;
  ModelConfig config_;
  TrainingData data_;
  torch::Device device_;
  Transformer model_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  TrainingProgress progress_;
  DistributedGroup* group_ = nullptr;         // null: one process
  CheckpointFiles checkpoints_;
  std::unique_ptr<GradientBuckets> buckets_;  // with a group
  double session_start_ = 0;  // steady-clock seconds when run() began
  double elapsed_at_start_ = 0;
  // Running sums since the last log line.
  torch::Tensor sum_loss_, sum_nll_;  // on the device; read when a line is logged
  int64_t sum_target_tokens_ = 0, sum_all_tokens_ = 0;
  double sum_allreduce_seconds_ = 0;  // data parallelism: time in all_reduce_update (with waiting for the slowest rank)
  int64_t sum_updates_ = 0;           // updates since the last log line
  double last_log_time_ = 0;
  double current_lr_ = 0;            // the rate of the last update, for the progress line
  int64_t last_saved_update_ = -1;      // the update of the newest checkpoint
  bool last_save_epoch_end_ = false;     // whether that checkpoint was an epoch end's (its file name)
  int64_t last_validated_update_ = -1;  // the update of the newest validation
  size_t epoch_batches_ = 0;         // batches in the current epoch, for the progress line
  double last_memory_release_ = 0;   // when free allocator pages were last handed back (now_seconds)
  static constexpr double kMemoryReleaseSeconds = 600;
};

}  // namespace tfm
