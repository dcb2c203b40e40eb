#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "decode/beam_search.h"

namespace tfm {

/// What the rules need to know of each row (hypothesis) at one decoding step.
struct RowFacts {
  std::vector<uint8_t> force_eos;                     // [N]: 1 where the hypothesis must end now (max length)
  std::vector<const std::vector<int64_t>*> history;   // [N]: its tokens so far (for n-gram blocking)
};

/// The rules every search applies to the next-token log-probabilities, as logits processors in a
/// few batched tensor ops over all N rows: never pad or bos; --unk-penalty subtracted from unk;
/// only eos where a row reached its maximum length; with --no-repeat-ngram n, -inf for every
/// token that would repeat an n-gram of the row's history. log_probs: [N, V], modified in place.
void apply_step_rules(torch::Tensor& log_probs, const RowFacts& rows, const BeamOptions& options);

}  // namespace tfm
