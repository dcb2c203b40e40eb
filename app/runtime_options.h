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

}  // namespace tfm
