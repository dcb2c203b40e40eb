#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model_config.h"

namespace tfm {

/// Architecture flags: a preset plus an override flag for every hyperparameter.
/// Unset overrides (no value, empty strings) keep the preset's value; a value given is checked
/// (validate(ModelConfig)), so `--dropout -0.1` is an error, not the preset's dropout.
struct ModelOptions {
  std::string preset = "auto";  // resolved by the command (train: by corpus size)
  std::optional<int64_t> d_model, d_ff, heads, encoder_layers, decoder_layers;
  std::optional<double> dropout, attention_dropout, relu_dropout;
  std::string attention_score, positions, norm;
  std::optional<int64_t> attention_window, max_positions;
  bool untied = false;
};

void add_model_options(CLI::App& command, ModelOptions& options);

/// The preset with the overrides applied (std::invalid_argument for unknown names).
ModelConfig build_config(const ModelOptions& options, int64_t vocab_size);

}  // namespace tfm
