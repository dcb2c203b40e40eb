#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "train/checkpoint.h"
#include "train/update_step.h"
#include "train/validator.h"

namespace tfm {

/// The run's progress as people and programs read it (fairseq's progress bar and its JSON log):
/// running sums of the updates since the last line, a progress line on stderr (redrawn in
/// place on a terminal, a log line otherwise) and one record per line or validation in
/// SAVE_DIR/metrics.jsonl.
class ProgressLog {
 public:
  /// `ranks`: the data-parallel group's size (the lines add the all-reduce time), 0 for one
  /// process. `dtype` goes in each record.
  ProgressLog(std::string save_dir, std::string dtype, int ranks, double now);

  /// Counts one update into the running sums.
  void add(const UpdateTotals& totals);
  /// Nothing to report since the last line.
  bool empty() const { return target_tokens_ == 0; }
  double seconds_since_last_line(double now) const { return now - last_line_time_; }
  /// Writes the line and its record from the running sums, then starts new sums. `last`: the
  /// run's last line before a pause (a validation, the end), which ends a terminal's live line.
  void write_line(const TrainingProgress& progress, size_t epoch_batches, double elapsed_seconds,
                  std::optional<double> minutes_left, bool last, double now);
  /// Starts new sums without a line (ranks other than 0, whose sums rank 0 reports).
  void reset(double now);
  /// The validation's log line and record. `epoch`: the epoch it closes or falls in.
  void write_validation(const ValidationResult& result, const TrainingProgress& progress, int64_t epoch, bool epoch_end,
                        bool is_best, const std::string& best_metric, int64_t beam, double elapsed_seconds,
                        double seconds_taken);

 private:
  void append(const nlohmann::json& record) const;

  std::string save_dir_, dtype_;
  int ranks_;
  bool terminal_;
  torch::Tensor loss_, nll_;  // on the device; read when a line is written
  int64_t target_tokens_ = 0, all_tokens_ = 0, updates_ = 0;
  double allreduce_seconds_ = 0;
  double lr_ = 0;  // the rate of the last update
  double last_line_time_;
};

}  // namespace tfm
