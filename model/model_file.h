#pragma once
#include <cstdint>
#include <string>

#include <torch/serialize/archive.h>
#include <torch/types.h>

#include "model/model_config.h"
#include "model/shortlist.h"
#include "model/transformer.h"

namespace tfm {

/// Version of the model file layout this build writes and reads.
constexpr int64_t kModelFormatVersion = 1;

/// What a model file holds: enough to translate with nothing else.
struct LoadedModel {
  ModelConfig config;
  Transformer model{nullptr};
  std::string tokenizer_proto;  // the SentencePiece model's bytes
  Shortlist shortlist;          // empty unless the file has one (`tfm shortlist`)
};

/// How a model file stores its weights.
enum class ModelFileWeights {
  kAsTheyAre,  // float32 or bfloat16, as the model holds them
  /// Every linear layer's weight and the output matrix quantized to int8 as `--quantize int8`
  /// quantizes them at load (int8 values, one float32 scale per row), the rest in float32: a
  /// quarter of the bytes, read into a model that decodes in int8 on the CPU and only that
  /// (TransformerImpl::loaded_in_int8), with the translations of --quantize int8.
  kInt8,
};

/// Writes the format header, the config (JSON), the tokenizer and every parameter and buffer
/// into `archive`, and the shortlist unless it is empty. Training adds its own state to the same
/// archive (checkpoints). std::invalid_argument for a model read from an int8 model file.
void write_model(torch::serialize::OutputArchive& archive, Transformer& model, const std::string& tokenizer_proto,
                 const Shortlist& shortlist = Shortlist(), ModelFileWeights stored_as = ModelFileWeights::kAsTheyAre);

/// Rebuilds the model from its config and loads its weights (on `device`). Throws
/// std::runtime_error naming `origin` for a wrong format version, a missing or unexpected
/// tensor, or a tensor whose shape differs from the one the config implies. When `origin` is the
/// file's path, a config that describes a model larger than the file is rejected before building.
LoadedModel read_model(torch::serialize::InputArchive& archive, const std::string& origin, const torch::Device& device);

/// Convenience for model-only files: write_model + save_archive, open_archive + read_model
/// (model/archive_file.h).
void save_model_file(const std::string& path, Transformer& model, const std::string& tokenizer_proto,
                     const Shortlist& shortlist = Shortlist(),
                     ModelFileWeights stored_as = ModelFileWeights::kAsTheyAre);
LoadedModel load_model_file(const std::string& path, const torch::Device& device);
/// load_model_file for work that needs the float weights (`purpose`: training, averaging, a
/// shortlist): std::runtime_error naming `path` for an int8 model file.
LoadedModel load_float_model_file(const std::string& path, const torch::Device& device, const std::string& purpose);

}  // namespace tfm
