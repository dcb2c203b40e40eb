#include "train/checkpoint.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/archive_file.h"
#include "runtime/random_states.h"

namespace tfm {
namespace {

void write_progress(torch::serialize::OutputArchive& archive, const TrainingProgress& p) {
  archive.write("update", c10::IValue(p.update));
  archive.write("epoch", c10::IValue(p.epoch));
  archive.write("batch_in_epoch", c10::IValue(p.batch_in_epoch));
  archive.write("best", c10::IValue(p.best));
  archive.write("validations_without_improvement", c10::IValue(p.validations_without_improvement));
  archive.write("elapsed_seconds", c10::IValue(p.elapsed_seconds));
}

TrainingProgress read_progress(torch::serialize::InputArchive& archive) {
  auto read = [&](const char* key) {
    c10::IValue value;
    archive.read(key, value);
    return value;
  };
  TrainingProgress p;
  p.update = read("update").toInt();
  p.epoch = read("epoch").toInt();
  p.batch_in_epoch = read("batch_in_epoch").toInt();
  p.best = read("best").toDouble();
  p.validations_without_improvement = read("validations_without_improvement").toInt();
  p.elapsed_seconds = read("elapsed_seconds").toDouble();
  return p;
}

/// Dropout on CUDA draws from each device's generator: its state goes into the checkpoint too,
/// so that a resumed run continues the same random stream (one entry per device; none on CPU).
void write_cuda_random_states(torch::serialize::OutputArchive& trainer) {
  const auto states = cuda_random_states();
  trainer.write("cuda_rng_devices", c10::IValue(static_cast<int64_t>(states.size())));
  for (size_t i = 0; i < states.size(); ++i) trainer.write("cuda_rng_state_" + std::to_string(i), states[i]);
}

void restore_cuda_random_states(torch::serialize::InputArchive& trainer) {
  c10::IValue saved;
  if (!trainer.try_read("cuda_rng_devices", saved)) return;  // written on a CPU-only build of old
  std::vector<torch::Tensor> states(static_cast<size_t>(saved.toInt()));
  for (size_t i = 0; i < states.size(); ++i) trainer.read("cuda_rng_state_" + std::to_string(i), states[i]);
  set_cuda_random_states(states);
}

}  // namespace

void save_checkpoint(const std::string& path, Transformer& model, const std::string& tokenizer_proto,
                     torch::optim::Adam& optimizer, const TrainingProgress& progress,
                     const nlohmann::json& train_options) {
  torch::serialize::OutputArchive archive;
  write_model(archive, model, tokenizer_proto);
  torch::serialize::OutputArchive trainer;
  write_progress(trainer, progress);
  torch::serialize::OutputArchive optimizer_state;
  optimizer.save(optimizer_state);
  trainer.write("optimizer", optimizer_state);
  trainer.write("cpu_rng_state", cpu_random_state());
  write_cuda_random_states(trainer);
  trainer.write("train_options", c10::IValue(train_options.dump()));
  archive.write("trainer", trainer);
  save_archive(archive, path);
}

nlohmann::json read_train_options(const std::string& path) {
  auto archive = open_archive(path, torch::kCPU);
  torch::serialize::InputArchive trainer;
  c10::IValue options;
  if (!archive.try_read("trainer", trainer) || !trainer.try_read("train_options", options) || !options.isString()) {
    return nlohmann::json::object();
  }
  try {
    return nlohmann::json::parse(options.toStringRef());
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(path + ": damaged training options");
  }
}

TrainingProgress read_recorded_progress(const std::string& path) {
  auto archive = open_archive(path, torch::kCPU);
  torch::serialize::InputArchive trainer;
  if (!archive.try_read("trainer", trainer)) {
    throw std::runtime_error(path + ": a model file without training state (no recorded progress)");
  }
  try {
    return read_progress(trainer);
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    throw std::runtime_error(path + ": damaged training state (" + message.substr(0, message.find('\n')) + ")");
  }
}

TrainingProgress restore_training_state(const std::string& path, torch::optim::Adam& optimizer,
                                        const torch::Device& device) {
  auto archive = open_archive(path, device);
  torch::serialize::InputArchive trainer;
  if (!archive.try_read("trainer", trainer)) {
    throw std::runtime_error(path + ": a model file without training state (cannot resume from it)");
  }
  try {
    const auto progress = read_progress(trainer);
    torch::serialize::InputArchive optimizer_state;
    trainer.read("optimizer", optimizer_state);
    optimizer.load(optimizer_state);
    torch::Tensor rng;
    trainer.read("cpu_rng_state", rng);
    set_cpu_random_state(rng);
    restore_cuda_random_states(trainer);
    return progress;
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    throw std::runtime_error(path + ": damaged training state (" + message.substr(0, message.find('\n')) + ")");
  }
}

}  // namespace tfm
