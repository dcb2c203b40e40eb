#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "decode/beam_search.h"
#include "decode/scorer.h"

namespace tfm {

/// Greedy decoding: at every step each sentence takes its most probable token, after the same
/// step rules as beam search (decode/step_rules.h), and leaves the batch at eos or its maximum
/// length. One row per sentence: no beam bookkeeping, no top-k, and the state shrinks as
/// sentences finish. Returns one hypothesis per sentence, scored as beam search scores them.
/// Options used: length_penalty (for the score), max_len_a/b, unk_penalty, no_repeat_ngram.
std::vector<std::vector<Hypothesis>> greedy_search(Scorer& scorer, const torch::Tensor& source,
                                                   const std::vector<int64_t>& source_lengths,
                                                   const BeamOptions& options);

/// Greedy when beam and nbest are 1, beam search otherwise.
std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                            const std::vector<int64_t>& source_lengths, const BeamOptions& options);

}  // namespace tfm
