#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model_config.h"

namespace tfm {

/// Architecture flags: a preset plus an override flag for every hyperparameter.
/// Unset overrides (negative numbers, empty strings) keep the preset's value.
struct ModelOptions {
  std::string preset = "auto";  // resolved by the command (train: by corpus size)
  int64_t d_model = -1, d_ff = -1, heads = -1, encoder_layers = -1, decoder_layers = -1;
  double dropout = -1, attention_dropout = -1, relu_dropout = -1;
  std::string attention_score, positions, norm;
  int64_t attention_window = -1, max_positions = -1;
  bool untied = false;
};

void add_model_options(CLI::App& command, ModelOptions& options);

/// The preset with the overrides applied (std::invalid_argument for unknown names).
ModelConfig build_config(const ModelOptions& options, int64_t vocab_size);

}  // namespace tfm
