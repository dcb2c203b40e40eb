#pragma once
#include <cstdint>
#include <string>

#include "train/lr_schedule.h"

namespace tfm {

/// The training settings that belong to a model preset: `tfm train` uses them for every flag the
/// user leaves unset. base and big keep the paper's (§5.3: the noam schedule with 4000 warm-up
/// updates); small and tiny, the CPU presets, use the recipe that won the Multi30k search on a
/// 2-core CPU (the table of candidates is in BENCHMARKS.md, "Quality in an hour").
struct PresetRecipe {
  LrScheduleOptions lr;               // kind, factor, peak, warm-up and cool-down (d_model is the model's)
  int64_t max_tokens = 0;             // padded subwords per side per batch
  int64_t save_interval_updates = 0;  // numbered checkpoints between epoch ends too (0 = off)
  int64_t validate_every = 0;         // validation every N updates instead of at every save (0 = at every save)
};

/// Throws std::invalid_argument for an unknown preset.
PresetRecipe preset_recipe(const std::string& preset);

/// Training pairs from which `--preset auto` picks base instead of small. Below it (Multi30k,
/// IWSLT-sized corpora) the paper's base model mostly memorises; above it (WMT) small underfits.
constexpr int64_t kAutoPresetBasePairs = 1'000'000;

/// `--preset auto`: the preset for a corpus of this many training pairs.
std::string auto_preset(int64_t training_pairs);

}  // namespace tfm
