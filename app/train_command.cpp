// `tfm train`: the paper's recipe on a parallel corpus, with checkpoints and resume.
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <type_traits>

#include "app/command.h"
#include "app/model_options.h"
#include "app/runtime_options.h"
#include "dist/distributed_group.h"
#include "dist/torchrun_env.h"
#include "model/archive_file.h"
#include "model/model_file.h"
#include "runtime/directory_lock.h"
#include "runtime/onednn_cache.h"
#include "runtime/precision.h"
#include "train/checkpoint.h"
#include "train/preset_recipe.h"
#include "train/trainer.h"
#include "train/training_data.h"

namespace tfm {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_signal(int) { g_interrupted.store(true); }

/// Data parallelism: one `tfm train` per device, joined as torchrun's environment says.
struct DistributedOptions {
  std::string backend = "auto";   // auto (nccl on CUDA, gloo on the CPU) | gloo | nccl
  double timeout_seconds = 1800;  // rendezvous and each collective (torch.distributed's default)
};

struct TrainCommandOptions {
  TrainOptions train;
  ModelOptions model;
  RuntimeOptions runtime;
  DistributedOptions distributed;
};

/// With torchrun's variables set (WORLD_SIZE > 1), joins the other ranks; else null. A CUDA
/// device without an index becomes cuda:LOCAL_RANK, one GPU per process.
std::unique_ptr<DistributedGroup> join_group(const DistributedOptions& o, const std::optional<TorchrunEnv>& env,
                                             const RuntimeOptions& runtime, torch::Device& device) {
  if (!env) return nullptr;
  if (device.is_cuda() && runtime.device.find(':') == std::string::npos) {
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env->local_rank));
  }
  const std::string backend = o.backend == "auto" ? default_backend(device) : o.backend;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
  auto group = std::make_unique<DistributedGroup>(*env, backend, timeout);
  // Rank 0 reports for every rank; the others log warnings and errors only.
  if (!group->is_main() && spdlog::get_level() < spdlog::level::warn) spdlog::set_level(spdlog::level::warn);
  return group;
}

/// The preset's training settings (train/preset_recipe.h) for every flag the command line (or
/// --config file) left unset.
void apply_preset_recipe(TrainOptions& t, const std::string& preset, const CLI::App& cmd) {
  const PresetRecipe recipe = preset_recipe(preset);
  const auto unset = [&cmd](const char* flag) { return cmd.count(flag) == 0; };
  if (unset("--lr-scheduler")) t.lr.kind = recipe.lr.kind;
  if (unset("--lr-factor")) t.lr.factor = recipe.lr.factor;
  if (unset("--lr")) t.lr.peak_lr = recipe.lr.peak_lr;
  if (unset("--warmup")) t.lr.warmup = recipe.lr.warmup;
  if (unset("--max-tokens")) t.batching.max_tokens = recipe.max_tokens;
  if (unset("--save-interval-updates")) t.save_interval_updates = recipe.save_interval_updates;
  if (unset("--validate-every")) t.validate_every = recipe.validate_every;
  // A cool-down needs a budget to end on; a run that stops only on --patience keeps the plain schedule.
  if (unset("--lr-cooldown")) t.lr.cooldown = has_budget(t) ? recipe.lr.cooldown : 0.0;
}

/// A resumed run keeps the schedule, batch size and checkpoint interval it was started with for
/// every flag left unset, whatever preset the flags name now (checkpoints before these were
/// recorded keep the preset's).
void keep_recorded_recipe(TrainOptions& t, const nlohmann::json& recorded, const CLI::App& cmd) {
  const auto keep = [&](const char* flag, const char* key, auto& field) {
    if (cmd.count(flag) == 0 && recorded.contains(key)) {
      field = recorded.at(key).get<std::remove_reference_t<decltype(field)>>();
    }
  };
  keep("--lr-scheduler", "lr_scheduler", t.lr.kind);
  keep("--lr-factor", "lr_factor", t.lr.factor);
  keep("--lr", "lr", t.lr.peak_lr);
  keep("--warmup", "warmup", t.lr.warmup);
  keep("--lr-cooldown", "lr_cooldown", t.lr.cooldown);
  keep("--max-tokens", "max_tokens", t.batching.max_tokens);
  keep("--save-interval-updates", "save_interval_updates", t.save_interval_updates);
  keep("--validate-every", "validate_every", t.validate_every);
}

void run_train(TrainCommandOptions& o, const CLI::App& cmd) {
  // Flags (model overrides such as --heads dividing --d-model, the learning rate...) are checked
  // before anything is created. `--preset auto` needs the corpus size, so until the data is
  // loaded it is checked as small; the real vocabulary size is known only once the tokenizer is.
  const bool auto_preset_wanted = o.model.preset == "auto";
  ModelOptions provisional = o.model;
  if (auto_preset_wanted) provisional.preset = "small";
  apply_preset_recipe(o.train, provisional.preset, cmd);  // first: its error lists auto among the presets
  build_config(provisional, o.train.vocab_size);
  validate(o.train);
  if (o.distributed.backend != "auto" && o.distributed.backend != "gloo" && o.distributed.backend != "nccl") {
    throw std::invalid_argument("--dist-backend " + o.distributed.backend + ": expected auto, gloo or nccl");
  }
  // It becomes a count of milliseconds: bounded, so that the conversion cannot overflow.
  if (!(o.distributed.timeout_seconds > 0 && o.distributed.timeout_seconds <= 7 * 86400)) {
    throw std::invalid_argument("--dist-timeout: must be positive and at most 604800 seconds (a week)");
  }
  const auto torchrun = read_torchrun_env();
  auto device = resolve(o.runtime);
  if (o.distributed.backend == "nccl" && !device.is_cuda()) {
    // Caught here, before the rendezvous: otherwise every other rank would wait out --dist-timeout.
    throw std::invalid_argument("--dist-backend nccl runs on GPUs: use --device cuda, or gloo on the CPU");
  }
  const auto group = join_group(o.distributed, torchrun, o.runtime, device);  // outlives the trainer
  const bool main_rank = !group || group->is_main();
  std::filesystem::create_directories(o.train.save_dir);
  std::optional<DirectoryLock> lock;  // held until training ends, by the rank that writes
  if (main_rank) lock.emplace(o.train.save_dir, "--save-dir", "tfm train");
  const std::string last = (std::filesystem::path(o.train.save_dir) / "checkpoint_last.pt").string();
  const bool resuming = !o.train.no_resume && std::filesystem::exists(last);
  // Resuming opens checkpoint_last.pt four times (options, tokenizer, model, optimizer state);
  // its checksums are verified at the first. Nothing writes it until the Trainer is built.
  std::optional<VerifyOnceScope> verify_once;
  if (resuming) verify_once.emplace();
  std::optional<nlohmann::json> recorded;
  if (resuming) recorded = read_train_options(last);
  if (resuming && o.train.dtype == "auto") {
    // A resumed run keeps the precision it was started with unless --dtype says otherwise.
    const auto dtype = recorded->value("dtype", std::string("auto"));
    if (dtype != "auto") o.train.dtype = dtype;
  }
  const PrecisionChoice precision = choose_precision(o.train.dtype, device, probe_precision_support());
  spdlog::info("precision: {}", precision.reason);
  if (!precision.warning.empty()) spdlog::warn("{}", precision.warning);
  o.train.dtype = to_string(precision.precision);  // recorded resolved, in checkpoints and metrics.jsonl
  if (device.is_cpu() && precision.precision == Precision::kBFloat16) {
    // Before the first product: oneDNN sizes its cache then. The products' row counts are bucketed
    // (model/bucketed_rows.h), so a run meets a bounded set of shapes, and this cache keeps them.
    widen_onednn_primitive_cache(kTrainingPrimitiveCacheCapacity);
  }
  if (o.train.require_resume && (o.train.no_resume || !std::filesystem::exists(last))) {
    throw std::invalid_argument(
        "--resume: " + (o.train.no_resume ? std::string("contradicts --no-resume") : last + " does not exist"));
  }
  std::optional<std::string> checkpoint_tokenizer;
  if (resuming) {
    checkpoint_tokenizer = load_model_file(last, torch::kCPU).tokenizer_proto;
  }
  // Rank 0 prepares the data (training the tokenizer if need be) into SAVE_DIR/prepared; the
  // others then load that cache rather than each training a tokenizer of its own.
  if (!main_rank) group->barrier();
  auto data = load_training_data(o.train, checkpoint_tokenizer);
  if (main_rank && group) group->barrier();
  if (auto_preset_wanted) {
    o.model.preset = auto_preset(total_pairs(data.train));
    spdlog::info("--preset auto: {} ({} training pairs; base from {})", o.model.preset, total_pairs(data.train),
                 kAutoPresetBasePairs);
    apply_preset_recipe(o.train, o.model.preset, cmd);
  }
  if (recorded) keep_recorded_recipe(o.train, *recorded, cmd);
  spdlog::info(
      "recipe: {} schedule, {}warm-up {} updates{}, {} tokens per side per batch x {}, checkpoints at epoch "
      "ends{}, validation {}",
      o.train.lr.kind,
      o.train.lr.kind == "noam" ? fmt::format("factor {:g}, ", o.train.lr.factor)
                                : fmt::format("peak {:g}, ", o.train.lr.peak_lr),
      o.train.lr.warmup,
      o.train.lr.cooldown > 0
          ? fmt::format(", linear cool-down to 0 over the last {:g}% of the budget", 100 * o.train.lr.cooldown)
          : std::string(),
      o.train.batching.max_tokens, o.train.update_freq,
      o.train.save_interval_updates > 0 ? fmt::format(" and every {} updates", o.train.save_interval_updates)
                                        : std::string(),
      o.train.validate_every > 0 ? fmt::format("every {} updates and at the end", o.train.validate_every)
                                 : std::string("at every checkpoint"));
  const ModelConfig config = build_config(o.model, data.tokenizer.vocab_size());
  o.train.lr.d_model = config.d_model;
  Trainer trainer(o.train, config, std::move(data), device, group.get());
  verify_once.reset();
  o.train.lr.d_model = trainer.model()->config().d_model;  // a resumed model keeps its own width

  g_interrupted = false;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const StopReason reason = trainer.run(g_interrupted);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  spdlog::info("stopped: {} after {} updates; checkpoints in {}", describe(reason), trainer.progress().update,
               o.train.save_dir);
  if (reason == StopReason::kInterrupted) {
    throw Interrupted("interrupted; saved " + last + " (run the same command to resume)");
  }
}

void add_data_options(CLI::App& cmd, TrainOptions& t) {
  const std::string group = "Data";
  cmd.add_option(
         "--train-src", t.train_src,
         "Source side (.gz), or without --train-tgt a TSV file or `tfm prepare` dir (DIR1:DIR2: several as one)")
      ->required()
      ->group(group);
  cmd.add_option("--train-tgt", t.train_tgt, "Target side, aligned line by line")->group(group);
  cmd.add_option("--valid-src", t.valid_src, "Validation source")->group(group);
  cmd.add_option("--valid-tgt", t.valid_tgt, "Validation target (none: --valid-src is a TSV file)")->group(group);
  cmd.add_option("--spm", t.spm, "Existing SentencePiece model (default: train a joint one)")->group(group);
  cmd.add_option("--vocab-size", t.vocab_size, "Joint vocabulary size when training one")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--max-len", t.cleaning.max_len, "Drop pairs with a side longer than this (subwords)")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--max-len-ratio", t.cleaning.max_len_ratio, "Drop pairs whose length ratio exceeds this")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--max-sentences", t.batching.max_sentences, "Sentences per batch at most (0 = by --max-tokens only)")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--max-tokens", t.batching.max_tokens,
                 "Padded subwords per side per batch (default: the preset's; paper: ~25000)")
      ->group(group);
  cmd.add_option("--update-freq", t.update_freq, "Batches accumulated per update")->capture_default_str()->group(group);
  cmd.add_option("--sub-batches", t.sub_batches,
                 "CPU: parts of each batch computed side by side on the threads, the update unchanged "
                 "(0 = auto: 2 with --threads 2 or more; 1 = off)")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--seed", t.batching.seed, "Seed for initialisation, batch order and dropout")
      ->capture_default_str()
      ->group(group);
}

void add_optimisation_options(CLI::App& cmd, TrainOptions& t) {
  const std::string group = "Optimisation";
  // Unset, these five take the preset's values (train/preset_recipe.h).
  cmd.add_option("--lr-scheduler", t.lr.kind,
                 "noam (the paper's) or inverse_sqrt (default: the preset's: noam for base and big, "
                 "inverse_sqrt for small and tiny)")
      ->group(group);
  cmd.add_option("--lr-factor", t.lr.factor, "noam: multiplies d_model^-0.5 * min(...) (default 1)")->group(group);
  cmd.add_option("--lr", t.lr.peak_lr, "inverse_sqrt: peak learning rate (default: the preset's)")->group(group);
  cmd.add_option("--warmup", t.lr.warmup, "Warmup updates (default: the preset's; 4000 for base and big)")
      ->group(group);
  cmd.add_option("--lr-cooldown", t.lr.cooldown,
                 "Fraction of the budget (--time-limit, --max-updates or --max-epochs) at its end over which the "
                 "rate falls linearly to 0 (default 0, no cool-down, for every preset)")
      ->group(group);
  cmd.add_option("--adam-beta1", t.adam_beta1, "Adam beta1")->capture_default_str()->group(group);
  cmd.add_option("--adam-beta2", t.adam_beta2, "Adam beta2")->capture_default_str()->group(group);
  cmd.add_option("--adam-eps", t.adam_eps, "Adam epsilon")->capture_default_str()->group(group);
  cmd.add_option("--label-smoothing", t.label_smoothing, "Label smoothing epsilon")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--clip-norm", t.clip_norm, "Clip the gradient norm (0 = off)")->capture_default_str()->group(group);
  cmd.add_option("--dtype", t.dtype,
                 "auto (bfloat16 where the CPU or GPU computes it natively, else float32; a resumed run keeps "
                 "its own), float32 or bfloat16 (autocast)")
      ->capture_default_str()
      ->group(group);
}

void add_schedule_options(CLI::App& cmd, TrainOptions& t) {
  const std::string group = "Stopping, validation, checkpoints";
  cmd.add_option("--max-epochs", t.max_epochs, "Stop after this many epochs (0 = no limit)")->group(group);
  cmd.add_option("--max-updates", t.max_updates, "Stop after this many updates (0 = no limit)")->group(group);
  cmd.add_option("--time-limit", t.time_limit_minutes, "Stop after this many minutes of training")->group(group);
  cmd.add_option("--patience", t.patience, "Stop after this many validations without improvement")->group(group);
  cmd.add_option("--validate-every", t.validate_every,
                 "Validate every N updates (and the last checkpoint) instead of at every checkpoint "
                 "(default: the preset's; 500 for small and tiny, else 0 = at every checkpoint)")
      ->group(group);
  cmd.add_option("--valid-beam", t.valid_beam, "Beam for validation BLEU (1 = greedy)")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--valid-max-sentences", t.valid_max_sentences, "Validation BLEU on the first N sentences (0 = all)")
      ->group(group);
  cmd.add_option("--best-metric", t.best_metric, "bleu or loss: what checkpoint_best.pt maximises/minimises")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--save-dir", t.save_dir, "Directory for checkpoints and metrics.jsonl")->required()->group(group);
  cmd.add_option("--save-interval-updates", t.save_interval_updates,
                 "Also checkpoint every N updates (default: the preset's; 200 for small and tiny, else 0)")
      ->group(group);
  cmd.add_option("--keep-last", t.keep_last, "Numbered checkpoints to keep")->capture_default_str()->group(group);
  cmd.add_option("--average-last", t.average_last,
                 "At the end, average the last N kept checkpoints into SAVE_DIR/checkpoint_avg.pt (§6.1; 0 = off)")
      ->capture_default_str()
      ->group(group);
  cmd.add_flag("--resume", t.require_resume,
               "Continue from SAVE_DIR/checkpoint_last.pt (the default when it exists; "
               "with this flag its absence is an error)")
      ->group(group);
  cmd.add_flag("--no-resume", t.no_resume, "Start over even if SAVE_DIR/checkpoint_last.pt exists")->group(group);
  cmd.add_option("--log-interval", t.log_interval, "Updates between log lines (when stderr is not a terminal)")
      ->capture_default_str()
      ->group(group);
}

void add_distributed_options(CLI::App& cmd, DistributedOptions& d) {
  const std::string group =
      "Several processes (launched by torchrun, or with its variables set: MASTER_ADDR, "
      "MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK)";
  cmd.add_option("--dist-backend", d.backend, "auto (nccl on CUDA, gloo on the CPU), gloo or nccl")
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--dist-timeout", d.timeout_seconds,
                 "Seconds to wait for the other ranks (rendezvous, each collective) before failing")
      ->capture_default_str()
      ->group(group);
}

}  // namespace

void add_train_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<TrainCommandOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train a Transformer (resumes from SAVE_DIR/checkpoint_last.pt)");
  add_data_options(*cmd, options->train);
  add_model_options(*cmd, options->model);
  add_optimisation_options(*cmd, options->train);
  add_schedule_options(*cmd, options->train);
  add_runtime_options(*cmd, options->runtime);
  add_distributed_options(*cmd, options->distributed);
  cmd->callback([options, cmd, &action] { action = [options, cmd] { run_train(*options, *cmd); }; });
}

}  // namespace tfm
