#include "train/trainer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <torch/torch.h>

#include "data/batching.h"
#include "data/epoch_batches.h"
#include "model/model_file.h"
#include "runtime/allocator.h"
#include "runtime/precision.h"
#include "runtime/random_states.h"
#include "text/option_names.h"
#include "train/replicas.h"
#include "train/update_share.h"

namespace fs = std::filesystem;

namespace tfm {
namespace {

// Pages the allocator has held free this long become the kernel's to take (see run()): longer
// than an update, so that a step's tensors reuse the pages the last step freed.
constexpr long kFreedMemoryLentAfterMs = 5000;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// `options` with --dtype auto resolved, for callers other than `tfm train` (which resolves and
/// logs it first); a named precision needs no probe of the hardware.
TrainOptions resolved(TrainOptions options, const torch::Device& device) {
  validate(options);
  if (options.dtype == "auto") {
    options.dtype = to_string(choose_precision("auto", device, probe_precision_support()).precision);
  }
  return options;
}

}  // namespace

Trainer::Trainer(const TrainOptions& options, const ModelConfig& config, TrainingData data, const torch::Device& device,
                 DistributedGroup* group)
    : options_(resolved(options, device)),
      config_(config),
      data_(std::move(data)),
      device_(device),
      group_(group),
      schedule_(options_),
      checkpoints_(options_.save_dir, options_.keep_last) {
  fs::create_directories(options_.save_dir);
  const auto last = checkpoints_.last().string();
  const bool resume = !options_.no_resume && fs::exists(last);
  if (resume) {
    auto loaded = load_float_model_file(last, device_, "resuming training");
    if (loaded.tokenizer_proto != data_.tokenizer.serialized()) {
      throw std::invalid_argument(last + ": its tokenizer differs from the training data's (use " +
                                  option_name("no_resume") +
                                  ", or the "
                                  "same data and " +
                                  option_name("spm") + ")");
    }
    config_ = loaded.config;  // the checkpoint's architecture wins over flags
    model_ = loaded.model;
  } else {
    validate(config_);
    torch::manual_seed(options_.batching.seed);
    model_ = Transformer(config_);
    model_->to(device_);
  }
  optimizer_ =
      std::make_unique<torch::optim::Adam>(model_->parameters(), torch::optim::AdamOptions(options_.lr.peak_lr)
                                                                     .betas({options_.adam_beta1, options_.adam_beta2})
                                                                     .eps(options_.adam_eps));
  if (resume) {
    progress_ = restore_training_state(last, *optimizer_, device_);
    spdlog::info("resuming from {}: update {}, epoch {}, batch {} of the epoch", last, progress_.update,
                 progress_.epoch, progress_.batch_in_epoch);
  }
  check_fits_positions(data_, config_);
  int64_t parameters = 0;
  for (const auto& p : model_->parameters()) parameters += p.numel();
  spdlog::info("model: {} parameters, d_model {}, {} heads, {}+{} layers; {} training pairs on {}", parameters,
               config_.d_model, config_.heads, config_.encoder_layers, config_.decoder_layers, total_pairs(data_.train),
               device_.str());
  if (group_) {
    join_ranks(*group_, model_, progress_, total_pairs(data_.train), data_.tokenizer.serialized(), device_);
  }
  batch_counts_ = count_batches(data_.train, options_.batching);
  update_step_ = std::make_unique<UpdateStep>(model_, *optimizer_, options_, device_, group_);
  validator_ = std::make_unique<Validator>(options_, data_.tokenizer, device_);
}

double Trainer::elapsed_seconds() const { return elapsed_at_start_ + now_seconds() - session_start_; }

ValidationResult Trainer::validate_model() {
  if (!data_.valid) return {};
  const KeepRandomStates training_stream;  // validating or not, training draws the same masks
  return validator_->run(model_, *data_.valid);
}

void Trainer::save(bool epoch_end, bool is_best) {
  progress_.elapsed_seconds = elapsed_seconds();
  const nlohmann::json train_options = options_;
  const fs::path written = checkpoints_.path_for(progress_, epoch_end);
  last_saved_update_ = progress_.update;
  last_save_epoch_end_ = epoch_end;
  save_checkpoint(written.string(), model_, data_.tokenizer.serialized(), *optimizer_, progress_, train_options);
  checkpoints_.saved(written, progress_, is_best);
}

void Trainer::validate_and_save(bool epoch_end, bool validate) {
  if (validate) last_validated_update_ = progress_.update;
  if (group_) {
    verify_replicas(*group_, model_, progress_.update);
    if (!group_->is_main()) {  // rank 0 validates and writes; the others wait for it
      last_saved_update_ = progress_.update;
      last_save_epoch_end_ = epoch_end;
      group_->barrier();
      return;
    }
  }
  bool is_best = false;
  if (validate && data_.valid) {
    const auto start = now_seconds();
    const auto result = validate_model();
    is_best = validator_->record(result, progress_);
    // At an epoch end the counter already names the next epoch; report the one just finished.
    const int64_t epoch = progress_.epoch - (epoch_end ? 1 : 0);
    log_->write_validation(result, progress_, epoch, epoch_end, is_best, options_.best_metric, options_.valid_beam,
                           elapsed_seconds(), now_seconds() - start);
  }
  save(epoch_end, is_best);
  if (group_) group_->barrier();
}

std::optional<StopReason> Trainer::should_stop(const std::atomic<bool>& interrupted) {
  const auto local = schedule_.stop_reason(progress_, elapsed_seconds(), interrupted.load());
  if (!group_) return local;
  // Clocks and signals differ between ranks, and all must stop at the same update: each votes,
  // and any rank's reason stops them all (an interruption first, for its quick save).
  constexpr int kReasons = static_cast<int>(StopReason::kInterrupted) + 1;
  std::vector<torch::Tensor> votes{
      torch::zeros({kReasons}, torch::TensorOptions().dtype(torch::kLong).device(device_))};
  if (local) votes[0][static_cast<int>(*local)] = 1;
  group_->all_reduce_sum(votes);
  const auto counts = votes[0].cpu();
  if (counts[static_cast<int>(StopReason::kInterrupted)].item<int64_t>() > 0) return StopReason::kInterrupted;
  for (int reason = 0; reason < kReasons; ++reason) {
    if (counts[reason].item<int64_t>() > 0) return static_cast<StopReason>(reason);
  }
  return std::nullopt;
}

void Trainer::log_progress(bool force) {
  const double now = now_seconds();
  if (!is_main()) {  // rank 0 reports for all (its sums are over every rank already)
    log_->reset(now);
    return;
  }
  const bool terminal = isatty(STDERR_FILENO) != 0;
  if (!force && !schedule_.log_due(progress_.update, log_->seconds_since_last_line(now), terminal)) return;
  if (log_->empty()) return;
  const double elapsed = elapsed_at_start_ + now - session_start_;
  log_->write_line(progress_, epoch_batches_, elapsed, schedule_.minutes_left(progress_.update, elapsed), force, now);
}

void Trainer::after_update(bool epoch_end) {
  log_progress(false);
  if (epoch_end) return;  // the epoch's end validates and saves
  if (const CheckpointAction action = schedule_.after_update(progress_.update); action.save) {
    if (isatty(STDERR_FILENO)) fmt::print(stderr, "\n");
    validate_and_save(false, action.validate);
  }
}

bool Trainer::train_epoch(BatchPrefetcher& prefetcher, const std::atomic<bool>& interrupted) {
  auto batches = std::make_shared<EpochBatches>(data_.train, batch_counts_, options_.batching, progress_.epoch);
  epoch_batches_ = batches->size();
  if (progress_.batch_in_epoch > static_cast<int64_t>(epoch_batches_)) {
    // Resumed with other batching flags (e.g. --max-tokens), the epoch may have fewer batches
    // than the checkpoint had done: it is over. (Left alone, the loop below never advanced.)
    spdlog::warn("resumed at batch {} of epoch {}, which has {} batches with these options: starting the next epoch",
                 progress_.batch_in_epoch, progress_.epoch, epoch_batches_);
    progress_.batch_in_epoch = static_cast<int64_t>(epoch_batches_);
  }
  // With one process, rank 0 of 1 takes every batch; with several, each its share of each update.
  const int rank = group_ ? group_->rank() : 0, ranks = group_ ? group_->size() : 1;
  const auto per_rank = static_cast<size_t>(options_.update_freq);
  auto mine = std::make_shared<const std::vector<size_t>>(
      rank_batches(epoch_batches_, static_cast<size_t>(progress_.batch_in_epoch), per_rank, rank, ranks));
  prefetcher.begin_epoch(
      mine->size(), [batches, mine](size_t i) { return batches->collate((*mine)[i]); }, 0);
  const auto budget_used = [&] { return schedule_.budget_used(progress_, elapsed_seconds(), epoch_batches_); };
  while (progress_.batch_in_epoch < static_cast<int64_t>(epoch_batches_)) {
    const auto share =
        share_of_update(static_cast<size_t>(progress_.batch_in_epoch), epoch_batches_, per_rank, rank, ranks);
    log_->add(update_step_->run(prefetcher, share.count, progress_.update + 1, budget_used));
    progress_.batch_in_epoch += static_cast<int64_t>(share.consumed);
    ++progress_.update;
    const bool epoch_end = progress_.batch_in_epoch == static_cast<int64_t>(epoch_batches_);
    after_update(epoch_end);
    if (!epoch_end && should_stop(interrupted)) return false;
  }
  return true;
}

StopReason Trainer::run(const std::atomic<bool>& interrupted) {
  session_start_ = now_seconds();
  elapsed_at_start_ = progress_.elapsed_seconds;
  last_saved_update_ = progress_.update;
  last_validated_update_ = progress_.update;  // a resumed run that stops at once rewrites nothing
  // With decay off (app/main.cpp) batches of changing shapes would grow the heap without bound.
  lend_freed_memory_to_the_kernel_after(kFreedMemoryLentAfterMs);
  log_ = std::make_unique<ProgressLog>(options_.save_dir, options_.dtype, group_ ? group_->size() : 0, session_start_);
  BatchPrefetcher prefetcher(device_);  // one collating thread for the whole run
  for (;;) {
    if (const auto stop = should_stop(interrupted)) {
      log_progress(true);
      if (*stop == StopReason::kInterrupted) {
        if (is_main()) save(false, false);  // quick: no validation, just keep the work
        return *stop;
      }
      // Saved already (an epoch end just before the stop): rewritten under the same name, so
      // averaging does not count it twice.
      const bool saved = progress_.update == last_saved_update_;
      if (schedule_.at_stop(progress_.update, last_saved_update_, last_validated_update_).save) {
        validate_and_save(saved && last_save_epoch_end_, true);
      }
      if (is_main()) checkpoints_.write_average(options_.average_last);
      return *stop;
    }
    if (train_epoch(prefetcher, interrupted)) {  // an epoch's end (§5.2's "checkpoints")
      log_progress(true);
      ++progress_.epoch;
      progress_.batch_in_epoch = 0;
      validate_and_save(true, schedule_.at_epoch_end(progress_.update).validate);
    }
  }
}

}  // namespace tfm
