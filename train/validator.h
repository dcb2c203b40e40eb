#pragma once
#include <cstdint>
#include <limits>

#include <torch/types.h>

#include "data/shard.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/train_options.h"

namespace tfm {

/// Validation results: loss and perplexity per target token, and BLEU of the decoded split.
struct ValidationResult {
  double loss = 0, nll = 0, ppl = 0;
  double bleu = std::numeric_limits<double>::quiet_NaN();
  int64_t sentences = 0;
};

/// Scores a model on the validation split (Marian's validators): label-smoothed loss and
/// perplexity over its batches, and corpus BLEU of its translations (--valid-beam, on the
/// first --valid-max-sentences sentences). Both in the training step's precision (--dtype, which
/// the Trainer has resolved from auto), as fairseq and Marian validate: the loss under autocast,
/// the translations as `tfm translate --dtype` gives them.
class Validator {
 public:
  Validator(const TrainOptions& options, Tokenizer tokenizer, const torch::Device& device);

  /// The model is put in evaluation mode and back in training mode afterwards.
  ValidationResult run(Transformer model, const Shard& valid) const;

  /// Records `result` in `progress` under --best-metric; returns whether it is the best so far.
  bool record(const ValidationResult& result, TrainingProgress& progress) const;

 private:
  TrainOptions options_;
  Tokenizer tokenizer_;
  torch::Device device_;
};

}  // namespace tfm
