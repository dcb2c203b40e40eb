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

/// Opens a file written by save_archive (std::runtime_error if it is not one). Every zip record's
/// CRC-32 is verified first (model/zip_checksums.h), a full read of the file.
torch::serialize::InputArchive open_archive(const std::string& path, const torch::Device& device);

/// While one of these lives, open_archive verifies each version of a file (device, inode, size,
/// change times) once instead of at every open. For a sequence that opens one file several times
/// and writes none, such as resuming from checkpoint_last.pt (its options, tokenizer, model and
/// optimizer state: four full CRC passes, about a second each for a 1 GB checkpoint). Only there:
/// file times are as coarse as the kernel's tick, so a file rewritten in place with the same size
/// within a few milliseconds could pass for the version already verified.
class VerifyOnceScope {
 public:
  VerifyOnceScope();
  ~VerifyOnceScope();
  VerifyOnceScope(const VerifyOnceScope&) = delete;
  VerifyOnceScope& operator=(const VerifyOnceScope&) = delete;
};
/// Writes through a temporary file and a rename, so a crash never leaves a half-written file.
void save_archive(torch::serialize::OutputArchive& archive, const std::string& path);

/// Convenience for model-only files: write_model + save_archive, open_archive + read_model.
void save_model_file(const std::string& path, Transformer& model, const std::string& tokenizer_proto,
                     const Shortlist& shortlist = Shortlist(),
                     ModelFileWeights stored_as = ModelFileWeights::kAsTheyAre);
LoadedModel load_model_file(const std::string& path, const torch::Device& device);
/// load_model_file for work that needs the float weights (`purpose`: training, averaging, a
/// shortlist): std::runtime_error naming `path` for an int8 model file.
LoadedModel load_float_model_file(const std::string& path, const torch::Device& device, const std::string& purpose);

}  // namespace tfm
