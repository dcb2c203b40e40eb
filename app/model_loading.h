#pragma once
#include <string>
#include <vector>

#include <torch/types.h>

#include "app/decoding_options.h"
#include "app/runtime_options.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"
#include "translation/translator.h"

namespace tfm {

struct LoadedModels {
  std::vector<Transformer> models;
  Tokenizer tokenizer;
  Shortlist shortlist;  // the first file's (empty if it has none)
};

/// Loads one model file or several (an ensemble); all must carry the same tokenizer. With
/// `need_shortlist`, the first must have a shortlist (std::invalid_argument otherwise).
LoadedModels load_models(const std::vector<std::string>& paths, const torch::Device& device,
                         bool need_shortlist = false);

/// What `translate` and `eval --model` share: validates the options (--dtype by name), resolves
/// the device, loads the model files and builds the translator.
Translator open_translator(const std::vector<std::string>& paths, const DecodingOptions& decoding,
                           const RuntimeOptions& runtime);

}  // namespace tfm
