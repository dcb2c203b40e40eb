#pragma once
#include <string>
#include <vector>

#include <torch/types.h>

#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

struct LoadedModels {
  std::vector<Transformer> models;
  Tokenizer tokenizer;
};

/// Loads one model file or several (an ensemble); all must carry the same tokenizer.
LoadedModels load_models(const std::vector<std::string>& paths, const torch::Device& device);

}  // namespace tfm
