#pragma once
#include <optional>
#include <string>

#include "data/shard.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "train/train_options.h"

namespace tfm {

/// What training reads: the tokenizer the ids come from and the tokenized splits.
struct TrainingData {
  Tokenizer tokenizer;
  std::vector<Shard> train;
  std::optional<Shard> valid;
};

/// The tokenizer and tokenized splits for training, from either
///  - `tfm prepare` directories (--train-src DIR, or DIR1:DIR2:... as one training set; no
///    --train-tgt), whose shards are mapped, not read, or
///  - raw aligned text files (.gz allowed), or one source<TAB>target file (no --train-tgt):
///    tokenized with `tokenizer_proto` (a resumed checkpoint's), else --spm, else a joint
///    SentencePiece model trained on the training files. The result is prepared into
///    SAVE_DIR/prepared/ and reused while the inputs and the tokenizer are the same.
TrainingData load_training_data(const TrainOptions& options, const std::optional<std::string>& tokenizer_proto);

/// Learned positions end at max_positions, and a batch holding a longer sentence (with its eos or
/// bos) would stop a run at whatever update first draws it: std::invalid_argument naming the
/// first such pair, checked once before training.
void check_fits_positions(const TrainingData& data, const ModelConfig& config);

}  // namespace tfm
