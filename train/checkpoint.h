#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include <torch/optim/adam.h>
#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "model/model_file.h"
#include "model/transformer.h"

namespace tfm {

/// Where training stands; saved in every checkpoint so --resume continues exactly.
struct TrainingProgress {
  int64_t update = 0;                                      // optimizer steps taken
  int64_t epoch = 1;                                       // current epoch, 1-based
  int64_t batch_in_epoch = 0;                              // batches of the current epoch already consumed
  double best = std::numeric_limits<double>::quiet_NaN();  // best validation metric so far
  int64_t validations_without_improvement = 0;
  double elapsed_seconds = 0;  // training time so far, across resumes (for --time-limit)
};

/// A checkpoint is a model file (model/model_file.h: `tfm translate` reads it directly) plus the
/// optimizer state, the progress, the CPU random generator state and the training options.
void save_checkpoint(const std::string& path, Transformer& model, const std::string& tokenizer_proto,
                     torch::optim::Adam& optimizer, const TrainingProgress& progress,
                     const nlohmann::json& train_options);

/// The training options stored in checkpoint `path` (an empty object for a model file without
/// training state). Throws std::runtime_error when the file cannot be read.
nlohmann::json read_train_options(const std::string& path);

/// The progress checkpoint `path` recorded when it was saved. std::runtime_error naming the file
/// when it has no training state or cannot be read.
TrainingProgress read_recorded_progress(const std::string& path);

/// Restores the optimizer, progress and random state from a checkpoint whose model part was
/// loaded with load_model_file. Throws std::runtime_error naming the file if it has none (a
/// model-only file, e.g. from `tfm average`).
TrainingProgress restore_training_state(const std::string& path, torch::optim::Adam& optimizer,
                                        const torch::Device& device);

}  // namespace tfm
