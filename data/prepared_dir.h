#pragma once
// The directory `tfm prepare --out DIR` writes and `tfm train` reads:
//   DIR/spm.model   the joint SentencePiece model the ids come from
//   DIR/train.bin   the training split (data/dataset_file.h)
//   DIR/valid.bin   the validation split, when one was given
#include <optional>
#include <string>

#include "data/parallel_dataset.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

/// File names inside a prepared directory.
constexpr const char* kPreparedModelFile = "spm.model";
constexpr const char* kPreparedTrainFile = "train.bin";
constexpr const char* kPreparedValidFile = "valid.bin";

/// A prepared directory, loaded.
struct PreparedData {
  Tokenizer tokenizer;
  ParallelDataset train;
  std::optional<ParallelDataset> valid;
};

/// Writes the model and splits into `dir` (created if missing). A valid.bin left from an earlier
/// run is removed when `valid` is null, so the directory never mixes two preparations.
/// Throws std::runtime_error when a file cannot be written.
void save_prepared(const std::string& dir, const Tokenizer& tokenizer, const ParallelDataset& train,
                   const ParallelDataset* valid);

/// Loads `dir`, checking every split's vocabulary size against the model's.
/// Throws std::runtime_error naming the file that is missing, corrupt or does not match.
PreparedData load_prepared(const std::string& dir);

/// True when `dir` holds a model and a train split (what `tfm train` needs to tell a prepared
/// directory from raw text).
bool is_prepared_dir(const std::string& dir);

}  // namespace tfm
