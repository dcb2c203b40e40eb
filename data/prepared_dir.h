#pragma once
// The directory `tfm prepare --out DIR` writes and `tfm train` reads:
//   DIR/spm.model                  the joint SentencePiece model the ids come from
//   DIR/train.bin                  the training split as one shard (data/dataset_file.h), or
//   DIR/train.000.bin, .001, ...   as several, each of bounded size
//   DIR/valid.bin                  the validation split, when one was given
#include <optional>
#include <string>
#include <vector>

#include "data/shard.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

/// File names inside a prepared directory.
constexpr const char* kPreparedModelFile = "spm.model";
constexpr const char* kPreparedTrainFile = "train.bin";
constexpr const char* kPreparedValidFile = "valid.bin";

/// A prepared directory (or several), opened: the shards are mapped, not read.
struct PreparedData {
  Tokenizer tokenizer;
  std::vector<Shard> train;
  std::optional<Shard> valid;
};

/// The shard files of split `split` ("train") in `dir`, in order: SPLIT.bin, or SPLIT.NNN.bin
/// numbered from 000 without a gap. Empty when there are none. std::runtime_error when both
/// forms are present or a number is missing (the directory mixes two preparations).
std::vector<std::string> split_files(const std::string& dir, const std::string& split);

/// Removes every shard file of `split` in `dir` (before a new preparation writes it).
void remove_split_files(const std::string& dir, const std::string& split);

/// Opens `dir`, checking every shard's vocabulary size against the model's. Shard checksums are
/// left to Shard::verify (training verifies each shard before its first batch).
/// std::runtime_error naming the file that is missing, damaged or does not match.
PreparedData load_prepared(const std::string& dir);

/// Several directories as one training set (fairseq's DIR1:DIR2): their training shards in the
/// order given, the first one's validation split. Every directory must hold the same tokenizer.
PreparedData load_prepared(const std::vector<std::string>& dirs);

/// True when `dir` holds a model and a train split (what `tfm train` needs to tell a prepared
/// directory from raw text).
bool is_prepared_dir(const std::string& dir);

}  // namespace tfm
