#pragma once
#include <string>

#include <torch/types.h>
#include <CLI/CLI.hpp>

namespace tfm {

/// Where and how a model runs; every command that runs a model takes these flags.
struct RuntimeOptions {
  std::string device = "auto";  // cpu | cuda | cuda:N | auto
};

void add_runtime_options(CLI::App& command, RuntimeOptions& options);

/// Validates the flags and resolves the device (throws std::invalid_argument).
torch::Device resolve(const RuntimeOptions& options);

/// The device a model decodes on once it is known whether it decodes in int8: int8 runs on the
/// CPU only, so with --device auto an int8 model goes there even where CUDA is usable; a device
/// the user named stays (and the int8 path refuses it with its own error).
torch::Device decoding_device(const RuntimeOptions& options, const torch::Device& resolved, bool int8);

}  // namespace tfm
