#include "train/trainer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include <torch/torch.h>

#include "data/batch_prefetcher.h"
#include "data/batching.h"
#include "decode/translator.h"
#include "metrics/bleu.h"
#include "model/loss.h"
#include "model/model_file.h"
#include "runtime/allocator.h"
#include "runtime/durable_file.h"
#include "runtime/errors.h"
#include "runtime/kernels.h"
#include "runtime/precision.h"
#include "train/checkpoint_average.h"
#include "train/fused_adam.h"
#include "train/update_share.h"
#include "text/special_ids.h"

namespace fs = std::filesystem;

namespace tfm {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// total += value, starting from undefined.
void add_to(torch::Tensor& total, const torch::Tensor& value) { total = total.defined() ? total + value : value; }

void set_learning_rate(torch::optim::Adam& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

void append_metrics(const std::string& save_dir, const nlohmann::json& record) {
  const fs::path path = fs::path(save_dir) / "metrics.jsonl";
  std::ofstream out(path, std::ios::app);
  out << record.dump() << '\n';
  // A full disk must stop the run loudly, not leave a silently truncated log.
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write (disk full?)");
}

/// Source and reference texts of a tokenized split, for BLEU (decoded from the ids it holds).
std::pair<std::vector<std::string>, std::vector<std::string>> split_texts(const ParallelDataset& data,
                                                                          const Tokenizer& tokenizer,
                                                                          int64_t limit) {
  const int64_t n = limit > 0 ? std::min(limit, data.size()) : data.size();
  std::vector<std::string> sources, references;
  for (int64_t i = 0; i < n; ++i) {
    sources.push_back(tokenizer.decode(data.source.ids(i)));
    references.push_back(tokenizer.decode(data.target.ids(i)));
  }
  return {sources, references};
}

/// Learned positions end at max_positions, and a batch holding a longer sentence (with its eos or
/// bos) would stop the run at whatever update first draws it: checked once, before training.
void check_fits_positions(const ModelConfig& config, const ParallelDataset& data, const std::string& split) {
  if (config.positions != PositionEncoding::kLearned) return;
  for (int64_t i = 0; i < data.size(); ++i) {
    const int64_t longest = std::max(data.source.length(i), data.target.length(i));
    if (longest + 1 > config.max_positions) {
      throw std::invalid_argument(fmt::format(
          "{} pair {} has {} subwords, more than the model's {} learned positions hold with eos (filter the data "
          "with --max-len {} or raise --max-positions)", split, i + 1, longest, config.max_positions,
          config.max_positions - 1));
    }
  }
}

}  // namespace

const char* describe(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxEpochs: return "reached --max-epochs";
    case StopReason::kMaxUpdates: return "reached --max-updates";
    case StopReason::kTimeLimit: return "reached --time-limit";
    case StopReason::kPatience: return "no validation improvement for --patience validations";
    case StopReason::kInterrupted: return "interrupted";
  }
  return "?";
}

Trainer::Trainer(const TrainOptions& options, const ModelConfig& config, TrainingData data,
                 const torch::Device& device, DistributedGroup* group)
    : options_(options),
      config_(config),
      data_(std::move(data)),
      device_(device),
      group_(group),
      checkpoints_(options_.save_dir, options_.keep_last) {
  validate(options_);
  // "auto" resolved here too, for callers other than `tfm train` (which resolves and logs it first);
  // a named precision needs no probe of the hardware.
  if (options_.dtype == "auto") {
    options_.dtype = to_string(choose_precision("auto", device_, probe_precision_support()).precision);
  }
  fs::create_directories(options_.save_dir);
  const auto last = checkpoints_.last().string();
  const bool resume = !options_.no_resume && fs::exists(last);
  if (resume) {
    auto loaded = load_model_file(last, device_);
    if (loaded.tokenizer_proto != data_.tokenizer.serialized()) {
      throw std::invalid_argument(last + ": its tokenizer differs from the training data's (use --no-resume, or the "
                                  "same data and --spm)");
    }
    config_ = loaded.config;  // the checkpoint's architecture wins over flags
    model_ = loaded.model;
  } else {
    validate(config_);
    torch::manual_seed(options_.batching.seed);
    model_ = Transformer(config_);
    model_->to(device_);
  }
  optimizer_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(), torch::optim::AdamOptions(options_.lr.peak_lr)
                                .betas({options_.adam_beta1, options_.adam_beta2})
                                .eps(options_.adam_eps));
  if (resume) {
    progress_ = restore_training_state(last, *optimizer_, device_);
    spdlog::info("resuming from {}: update {}, epoch {}, batch {} of the epoch", last, progress_.update,
                 progress_.epoch, progress_.batch_in_epoch);
  }
  check_fits_positions(config_, data_.train, "training");
  if (data_.valid) check_fits_positions(config_, *data_.valid, "validation");
  int64_t parameters = 0;
  for (const auto& p : model_->parameters()) parameters += p.numel();
  spdlog::info("model: {} parameters, d_model {}, {} heads, {}+{} layers; {} training pairs on {}", parameters,
               config_.d_model, config_.heads, config_.encoder_layers, config_.decoder_layers, data_.train.size(),
               device_.str());
  if (group_) join_ranks();
}

void Trainer::join_ranks() {
  torch::NoGradGuard no_grad;
  const auto on_device = torch::TensorOptions().dtype(torch::kLong).device(device_);
  // Where this rank starts: ranks that loaded other data, another tokenizer or no checkpoint
  // (a save directory not shared between nodes) would silently train different models.
  const auto tokenizer_hash = static_cast<int64_t>(std::hash<std::string>{}(data_.tokenizer.serialized()));
  const auto mine = torch::tensor({progress_.update, progress_.epoch, progress_.batch_in_epoch, data_.train.size(),
                                   tokenizer_hash}, on_device);
  std::vector<torch::Tensor> main{mine.clone()};
  group_->broadcast_from_main(main);
  std::vector<torch::Tensor> disagreeing{(mine != main[0]).any().to(torch::kLong).reshape({1})};
  group_->all_reduce_sum(disagreeing);
  if (const auto count = disagreeing[0].item<int64_t>(); count > 0) {
    throw std::runtime_error(fmt::format(
        "rank {}: {} rank(s) start from other data or another checkpoint than rank 0 (this rank: update {}, "
        "{} training pairs): every rank needs the same data flags and a save directory on a shared filesystem",
        group_->rank(), count, progress_.update, data_.train.size()));
  }
  // Rank 0's initialisation for all (on resume they are equal already: this costs one broadcast).
  auto parameters = model_->parameters();
  group_->broadcast_from_main(parameters);
  buckets_ = std::make_unique<GradientBuckets>(model_->parameters());
  spdlog::info("data parallel: {} ranks ({}), gradients all-reduced in {} bucket(s), {} elements per update",
               group_->size(), group_->backend(), buckets_->bucket_count(), buckets_->elements());
}

void Trainer::verify_replicas() {
  torch::NoGradGuard no_grad;
  // Integer sums of each parameter's bit patterns: exact whatever the summation order, so equal
  // on every rank exactly when the replicas are (bar a collision no update produces by chance).
  std::vector<torch::Tensor> sums;
  for (const auto& parameter : model_->parameters()) {
    const auto bits = parameter.detach().reshape(-1);
    const auto as_int = parameter.element_size() == 8 ? torch::kLong
                        : parameter.element_size() == 4 ? torch::kInt
                        : parameter.element_size() == 2 ? torch::kShort : torch::kByte;
    sums.push_back(bits.view(as_int).to(torch::kLong).sum());
  }
  const auto mine = torch::stack(sums);
  std::vector<torch::Tensor> main{mine.clone()};
  group_->broadcast_from_main(main);
  std::vector<torch::Tensor> differing{(mine != main[0]).any().to(torch::kLong).reshape({1})};
  group_->all_reduce_sum(differing);
  if (const auto count = differing[0].item<int64_t>(); count > 0) {
    throw InternalError(fmt::format("update {}: the parameters of {} rank(s) differ from rank 0's", progress_.update,
                                    count));
  }
  spdlog::info("ranks agree: parameters bit-identical on all {} ranks at update {}", group_->size(),
               progress_.update);
}

void Trainer::train_update(BatchPrefetcher& batches, size_t count) {
  model_->train();
  const Precision precision = parse_precision(options_.dtype);
  int64_t tokens = 0, all_tokens = 0;
  torch::Tensor loss, nll;  // this update's sums
  for (size_t i = 0; i < count; ++i) {
    const Batch batch = batches.next();
    const LossSums sums = naming_batch_on_out_of_memory([&] { return describe(batch); }, [&] {
      LossSums batch_sums;
      {
        AutocastGuard autocast(device_, precision);  // forward in bf16/fp16; backward outside, as autocast wants
        const auto logits = model_->forward(batch.source.to(device_), batch.target_in.to(device_));
        batch_sums =
            label_smoothed_cross_entropy(logits, batch.target_out.to(device_), options_.label_smoothing, kPadId);
      }
      batch_sums.loss.backward();
      return batch_sums;
    });
    // Sums stay on the device until a log line needs them: no wait for the device per batch.
    add_to(loss, sums.loss.detach());
    add_to(nll, sums.nll);
    tokens += batch.target_tokens;  // counted on the host when the batch was collated
    all_tokens += batch.source_tokens + batch.target_tokens;
  }
  // Each rank's gradients are sums over its target tokens; summed over the ranks and divided by
  // all their tokens below, the step is the one a single process would take on all the batches.
  // How far through the budget this update is; with a cool-down the rate depends on it, and the
  // ranks' clocks differ a little, so they use their mean to keep the replicas bit-identical.
  double budget = budget_used();
  if (group_) {
    const double start = now_seconds();
    all_reduce_update(loss, nll, tokens, all_tokens, budget);
    sum_allreduce_seconds_ += now_seconds() - start;
  }
  ++sum_updates_;
  add_to(sum_loss_, loss);
  add_to(sum_nll_, nll);
  sum_target_tokens_ += tokens;
  sum_all_tokens_ += all_tokens;
  // The summed loss over all accumulated batches, divided by their target tokens: a per-token
  // gradient however the update is split into batches.
  auto gradients = gradients_of(model_->parameters());
  scale_and_clip_gradients(gradients, 1.0 / static_cast<double>(std::max<int64_t>(tokens, 1)), options_.clip_norm);
  current_lr_ = learning_rate(options_.lr, progress_.update + 1, budget);
  set_learning_rate(*optimizer_, current_lr_);
  if (fused_kernels()) {
    fused_adam_step(*optimizer_);
  } else {
    optimizer_->step();
  }
  optimizer_->zero_grad();
}

void Trainer::all_reduce_update(torch::Tensor& loss, torch::Tensor& nll, int64_t& target_tokens,
                                int64_t& all_tokens, double& budget_used) {
  buckets_->all_reduce(*group_);
  // [5]: loss sum, nll sum, target tokens, all tokens, budget used; float64 counts tokens exactly
  // up to 2^53.
  const auto options = torch::TensorOptions().dtype(torch::kDouble).device(device_);
  const auto zero = torch::zeros({}, options);
  std::vector<torch::Tensor> stats{torch::stack({loss.defined() ? loss.to(options) : zero,
                                                 nll.defined() ? nll.to(options) : zero,
                                                 torch::tensor(static_cast<double>(target_tokens), options),
                                                 torch::tensor(static_cast<double>(all_tokens), options),
                                                 torch::tensor(budget_used, options)})};
  group_->all_reduce_sum(stats);
  loss = stats[0][0];
  nll = stats[0][1];
  const auto counts = stats[0].slice(0, 2).cpu();
  target_tokens = static_cast<int64_t>(counts[0].item<double>());
  all_tokens = static_cast<int64_t>(counts[1].item<double>());
  budget_used = counts[2].item<double>() / group_->size();
}

double Trainer::elapsed_seconds() const { return elapsed_at_start_ + now_seconds() - session_start_; }

double Trainer::budget_used() const {
  double used = 0;
  if (options_.max_updates > 0) {
    used = std::max(used, static_cast<double>(progress_.update) / static_cast<double>(options_.max_updates));
  }
  if (options_.time_limit_minutes > 0) {
    used = std::max(used, elapsed_seconds() / (options_.time_limit_minutes * 60));
  }
  if (options_.max_epochs > 0 && epoch_batches_ > 0) {
    const double epochs = static_cast<double>(progress_.epoch - 1) +
                          static_cast<double>(progress_.batch_in_epoch) / static_cast<double>(epoch_batches_);
    used = std::max(used, epochs / static_cast<double>(options_.max_epochs));
  }
  return std::min(used, 1.0);
}

ValidationResult Trainer::validate_model() {
  ValidationResult result;
  if (!data_.valid) return result;
  const auto& valid = *data_.valid;
  model_->eval();
  {
    torch::NoGradGuard no_grad;
    double loss = 0, nll = 0;
    int64_t tokens = 0;
    for (const auto& rows : make_batches(valid, options_.batching, 0)) {
      const Batch batch = collate(valid, rows);
      const auto sums = naming_batch_on_out_of_memory([&] { return "validation's " + describe(batch); }, [&] {
        const auto logits = model_->forward(batch.source.to(device_), batch.target_in.to(device_));
        return label_smoothed_cross_entropy(logits, batch.target_out.to(device_), options_.label_smoothing, kPadId);
      });
      loss += sums.loss.item<double>();
      nll += sums.nll.item<double>();
      tokens += batch.target_tokens;
    }
    result.loss = loss / std::max<int64_t>(tokens, 1);
    result.nll = nll / std::max<int64_t>(tokens, 1);
    result.ppl = std::exp(result.nll);
  }
  const auto [sources, references] = split_texts(valid, data_.tokenizer, options_.valid_max_sentences);
  TranslatorOptions translator_options;
  translator_options.search.beam = options_.valid_beam;
  translator_options.max_tokens = options_.batching.max_tokens;
  Translator translator({model_}, data_.tokenizer, translator_options, device_);
  std::vector<std::string> hypotheses;
  for (const auto& translation : translator.translate(sources)) hypotheses.push_back(translation.text());
  result.bleu = corpus_bleu(hypotheses, {references}, BleuOptions()).score;
  result.sentences = static_cast<int64_t>(sources.size());
  model_->train();
  return result;
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

void Trainer::write_average() {
  if (options_.average_last < 2) return;
  auto files = checkpoints_.numbered();
  if (files.size() > static_cast<size_t>(options_.average_last)) files.resize(options_.average_last);
  if (files.size() < 2) {
    spdlog::info("no checkpoint_avg.pt: {} numbered checkpoint{} kept, averaging needs two", files.size(),
                 files.size() == 1 ? "" : "s");
    return;
  }
  std::vector<std::string> paths;
  std::string names;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {  // oldest first, as `tfm average` lists them
    paths.push_back(it->string());
    if (!names.empty()) names += ' ';
    names += it->filename().string();
  }
  auto averaged = average_checkpoints(paths);
  const fs::path target = checkpoints_.average();
  save_model_file(target.string(), averaged.model, averaged.tokenizer_proto);  // durably: a crash keeps the old
  spdlog::info("{}: the average of the last {} checkpoints ({}): the model to translate with", target.string(),
               paths.size(), names);
}

void Trainer::validate_and_save(bool epoch_end, bool validate) {
  if (validate) last_validated_update_ = progress_.update;
  if (group_) {
    verify_replicas();
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
    const bool by_bleu = options_.best_metric == "bleu";
    const double metric = by_bleu ? result.bleu : result.loss;
    is_best = std::isnan(progress_.best) || (by_bleu ? metric > progress_.best : metric < progress_.best);
    if (is_best) {
      progress_.best = metric;
      progress_.validations_without_improvement = 0;
    } else {
      ++progress_.validations_without_improvement;
    }
    // At an epoch end the counter already names the next epoch; report the one just finished.
    const int64_t epoch = progress_.epoch - (epoch_end ? 1 : 0);
    spdlog::info("valid | epoch {} | update {} | loss {:.3f} | ppl {:.2f} | bleu {:.2f} ({} sentences, beam {}) | "
                 "best {} {:.3f}{} | {:.1f} s",
                 epoch, progress_.update, result.loss, result.ppl, result.bleu,
                 result.sentences, options_.valid_beam, options_.best_metric, progress_.best, is_best ? " (new)" : "",
                 now_seconds() - start);
    append_metrics(options_.save_dir, {{"type", "valid"}, {"update", progress_.update}, {"epoch", epoch},
                                       {"epoch_end", epoch_end},
                                       {"loss", result.loss}, {"ppl", result.ppl}, {"bleu", result.bleu},
                                       {"elapsed_s", elapsed_seconds()}});
  }
  save(epoch_end, is_best);
  if (group_) group_->barrier();
}

std::optional<StopReason> Trainer::should_stop(const std::atomic<bool>& interrupted) {
  const auto local = local_stop_reason(interrupted);
  if (!group_) return local;
  // Clocks and signals differ between ranks, and all must stop at the same update: each votes,
  // and any rank's reason stops them all (an interruption first, for its quick save).
  constexpr int kReasons = static_cast<int>(StopReason::kInterrupted) + 1;
  std::vector<torch::Tensor> votes{torch::zeros({kReasons}, torch::TensorOptions().dtype(torch::kLong).device(device_))};
  if (local) votes[0][static_cast<int>(*local)] = 1;
  group_->all_reduce_sum(votes);
  const auto counts = votes[0].cpu();
  if (counts[static_cast<int>(StopReason::kInterrupted)].item<int64_t>() > 0) return StopReason::kInterrupted;
  for (int reason = 0; reason < kReasons; ++reason) {
    if (counts[reason].item<int64_t>() > 0) return static_cast<StopReason>(reason);
  }
  return std::nullopt;
}

std::optional<StopReason> Trainer::local_stop_reason(const std::atomic<bool>& interrupted) const {
  if (interrupted.load()) return StopReason::kInterrupted;
  if (options_.max_updates > 0 && progress_.update >= options_.max_updates) return StopReason::kMaxUpdates;
  if (options_.max_epochs > 0 && progress_.epoch > options_.max_epochs) return StopReason::kMaxEpochs;
  if (options_.time_limit_minutes > 0 && elapsed_seconds() >= options_.time_limit_minutes * 60) {
    return StopReason::kTimeLimit;
  }
  if (options_.patience > 0 && progress_.validations_without_improvement >= options_.patience) {
    return StopReason::kPatience;
  }
  return std::nullopt;
}

void Trainer::log_progress(bool force) {
  const double now = now_seconds();
  const auto reset_sums = [&] {
    sum_loss_ = sum_nll_ = torch::Tensor();
    sum_target_tokens_ = sum_all_tokens_ = sum_updates_ = 0;
    sum_allreduce_seconds_ = 0;
    last_log_time_ = now;
  };
  if (!is_main()) {  // rank 0 reports for all (its sums are over every rank already)
    reset_sums();
    return;
  }
  const bool terminal = isatty(STDERR_FILENO) != 0;
  if (!force && !(terminal ? now - last_log_time_ >= 1.0 : progress_.update % options_.log_interval == 0)) return;
  if (sum_target_tokens_ == 0) return;
  const double seconds = std::max(now - last_log_time_, 1e-9);
  const double loss = sum_loss_.item<double>() / sum_target_tokens_;
  const double ppl = std::exp(sum_nll_.item<double>() / sum_target_tokens_);
  const double lr = current_lr_;
  const double tokens_per_second = sum_all_tokens_ / seconds;
  const double elapsed = elapsed_at_start_ + now - session_start_;
  std::string eta;
  if (options_.max_updates > 0 && progress_.update > 0) {
    eta = fmt::format(" | eta {:.0f} min", elapsed / progress_.update * (options_.max_updates - progress_.update) / 60);
  } else if (options_.time_limit_minutes > 0) {
    eta = fmt::format(" | eta {:.0f} min", std::max(0.0, options_.time_limit_minutes - elapsed / 60));
  }
  const double allreduce_ms = 1000 * sum_allreduce_seconds_ / std::max<int64_t>(sum_updates_, 1);
  const std::string line =
      fmt::format("epoch {} | batch {}/{} | update {} | loss {:.3f} | ppl {:.2f} | lr {:.3g} | {:.0f} tok/s{} | {:.0f} s{}",
                  progress_.epoch, progress_.batch_in_epoch, epoch_batches_, progress_.update, loss, ppl, lr,
                  tokens_per_second, group_ ? fmt::format(" | all-reduce {:.0f} ms/update", allreduce_ms) : "",
                  elapsed, eta);
  if (terminal) {
    fmt::print(stderr, "\r\033[K{}", line);  // one live line, redrawn in place
    if (force) fmt::print(stderr, "\n");
  } else {
    spdlog::info("train | {}", line);
  }
  nlohmann::json record = {{"type", "train"}, {"update", progress_.update}, {"epoch", progress_.epoch},
                           {"loss", loss}, {"ppl", ppl}, {"lr", lr}, {"tokens_per_s", tokens_per_second},
                           {"dtype", options_.dtype}, {"elapsed_s", elapsed}};
  if (group_) {
    record["ranks"] = group_->size();
    record["allreduce_ms_per_update"] = allreduce_ms;
  }
  append_metrics(options_.save_dir, record);
  reset_sums();
}

void Trainer::after_update(bool epoch_end) {
  log_progress(false);
  // jemalloc runs with decay off (re-faulting pages costs ~10 us each here), so free pages stay
  // resident however fragmented they get. LibTorch's CPU flash attention once made that grow
  // without bound (13 GB after nine minutes on the tiny preset; attention.cpp no longer uses it on
  // the CPU): handing free pages back every ten minutes caps any such growth for ~0.2% of the time.
  const double now = now_seconds();
  if (now - last_memory_release_ >= kMemoryReleaseSeconds) {
    release_free_memory();
    last_memory_release_ = now;
  }
  if (epoch_end) return;  // run() validates and saves at the epoch end
  const int64_t update = progress_.update;
  const bool validate_now = validation_due();
  const bool save_now = options_.save_interval_updates > 0 && update % options_.save_interval_updates == 0;
  if (validate_now || save_now) {
    if (isatty(STDERR_FILENO)) fmt::print(stderr, "\n");
    validate_and_save(false, validate_now || saves_validate());
  }
}

StopReason Trainer::run(const std::atomic<bool>& interrupted) {
  session_start_ = now_seconds();
  last_log_time_ = session_start_;
  elapsed_at_start_ = progress_.elapsed_seconds;
  last_saved_update_ = progress_.update;
  last_validated_update_ = progress_.update;  // a resumed run that stops at once rewrites nothing
  last_memory_release_ = session_start_;
  BatchPrefetcher prefetcher(data_.train, device_);  // one collating thread for the whole run
  for (;;) {
    if (auto stop = should_stop(interrupted)) {
      log_progress(true);
      if (*stop == StopReason::kInterrupted) {
        if (is_main()) save(false, false);  // quick: no validation, just keep the work
        return *stop;
      }
      // The last checkpoint is validated whatever the interval, for checkpoint_best and the
      // curve's last point. Saved already (an epoch end just before the stop): it is rewritten
      // under the same name, so averaging does not count it twice.
      const bool saved = progress_.update == last_saved_update_;
      if (!saved || progress_.update != last_validated_update_) {
        validate_and_save(saved && last_save_epoch_end_, true);
      }
      if (is_main()) write_average();
      return *stop;
    }
    const auto batches = make_batches(data_.train, options_.batching, progress_.epoch);
    epoch_batches_ = batches.size();
    if (progress_.batch_in_epoch > static_cast<int64_t>(batches.size())) {
      // Resumed with other batching flags (e.g. --max-tokens), the epoch may have fewer batches
      // than the checkpoint had done: it is over. (Left alone, the loop below never advanced.)
      spdlog::warn("resumed at batch {} of epoch {}, which has {} batches with these options: starting the next epoch",
                   progress_.batch_in_epoch, progress_.epoch, batches.size());
      progress_.batch_in_epoch = static_cast<int64_t>(batches.size());
    }
    // With one process, rank 0 of 1 takes every batch; with several, each its share of each update.
    const int rank = group_ ? group_->rank() : 0, ranks = group_ ? group_->size() : 1;
    const auto per_rank = static_cast<size_t>(options_.update_freq);
    prefetcher.begin_epoch(
        rank_batches(batches, static_cast<size_t>(progress_.batch_in_epoch), per_rank, rank, ranks), 0);
    while (progress_.batch_in_epoch < static_cast<int64_t>(batches.size())) {
      const auto share = share_of_update(static_cast<size_t>(progress_.batch_in_epoch), batches.size(), per_rank,
                                         rank, ranks);
      train_update(prefetcher, share.count);
      progress_.batch_in_epoch += static_cast<int64_t>(share.consumed);
      ++progress_.update;
      const bool epoch_end = progress_.batch_in_epoch == static_cast<int64_t>(batches.size());
      after_update(epoch_end);
      if (!epoch_end && should_stop(interrupted)) break;
    }
    if (progress_.batch_in_epoch == static_cast<int64_t>(batches.size())) {
      log_progress(true);
      ++progress_.epoch;
      progress_.batch_in_epoch = 0;
      validate_and_save(true, saves_validate() || validation_due());
    }
  }
}

}  // namespace tfm
