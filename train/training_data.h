#pragma once
#include <optional>
#include <string>

#include "train/train_options.h"
#include "train/trainer.h"

namespace tfm {

/// The tokenizer and tokenized splits for training, from either
///  - a `tfm prepare` directory (--train-src DIR, no --train-tgt), or
///  - raw aligned text files (.gz allowed), or one source<TAB>target file (no --train-tgt): tokenized with `tokenizer_proto` (a resumed
///    checkpoint's), else --spm, else a joint SentencePiece model trained on the training files.
///    The result is cached in SAVE_DIR/prepared/ and reused while the inputs are unchanged.
TrainingData load_training_data(const TrainOptions& options, const std::optional<std::string>& tokenizer_proto);

}  // namespace tfm
