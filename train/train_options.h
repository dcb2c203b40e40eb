#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "data/batching.h"
#include "data/cleaning.h"
#include "train/lr_schedule.h"

namespace tfm {

/// Everything `tfm train` needs besides the model's architecture (model/model_config.h).
struct TrainOptions {
  // Data
  std::string train_src, train_tgt;  // aligned text (.gz); train_tgt empty: a TSV file or a `tfm prepare` dir
  std::string valid_src, valid_tgt;  // valid_tgt empty: valid_src is a TSV file
  std::string spm;                   // existing SentencePiece model; empty = train a joint one
  int64_t vocab_size = 8000;
  CleaningOptions cleaning;
  BatchingOptions batching;  // max_tokens per side per batch, seed
  int64_t update_freq = 1;   // batches accumulated per update
  int64_t sub_batches = 0;   // parts of each batch computed side by side on CPU threads (0 = auto)
  // Optimisation (§5.3, §5.4)
  LrScheduleOptions lr;
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_eps = 1e-9;
  double label_smoothing = 0.1;
  double clip_norm = 0.0;      // 0 = no clipping
  std::string dtype = "auto";  // auto | float32 | bfloat16 | float16; resolved by run_train
  // Stopping
  int64_t max_epochs = 0, max_updates = 0;  // 0 = unlimited
  double time_limit_minutes = 0;
  int64_t patience = 0;  // validations without improvement before stopping (0 = never stop early)
  // Validation and checkpoints
  int64_t validate_every = 0;        // updates between validations, and only then (0 = at every save)
  int64_t valid_beam = 1;            // beam for validation BLEU (1 = greedy)
  int64_t valid_max_sentences = 0;   // validation BLEU on the first N sentences (0 = all)
  std::string best_metric = "bleu";  // "bleu" (higher is better) or "loss"
  std::string save_dir;
  int64_t save_interval_updates = 0;  // numbered checkpoints every N updates (0 = epoch ends only)
  int64_t keep_last = 5;              // numbered checkpoints kept (the paper averaged the last 5)
  int64_t average_last = 5;           // checkpoint_avg.pt: the mean of the last N kept at the end (0 = off)
  bool no_resume = false;             // start over even if checkpoint_last.pt exists
  bool require_resume = false;        // --resume: fail unless checkpoint_last.pt exists
  int64_t log_interval = 50;          // updates between progress log lines (non-terminal stderr)
};

/// Throws std::invalid_argument naming the flag.
void validate(const TrainOptions& options);

/// Whether the run has an end set in advance (--time-limit, --max-updates or --max-epochs),
/// which a learning-rate cool-down needs to end on.
bool has_budget(const TrainOptions& options);

void to_json(nlohmann::json& json, const TrainOptions& options);

}  // namespace tfm
