#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "decode/scorer.h"

namespace tfm {

/// Beam search settings; defaults are the paper's (§6.1: beam 4, maximum output length input + 50)
/// but for the length penalty. The paper's 0.6 left outputs short on Multi30k (validation brevity
/// penalty 0.91 for one model; still 0.95-0.99 at 1.5):
/// of 0.6, 1.0, 1.25, 1.5 and 2.0, 1.5 scored the highest validation BLEU for each of the four
/// 60-minute models of the issue-14 search (BENCHMARKS.md); `--lenpen 0.6` is the paper's.
struct BeamOptions {
  int64_t beam = 4;              // 1 = greedy
  double length_penalty = 1.5;   // alpha in GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha
  double max_len_a = 0.0;        // maximum output length = a * source length + b (eos included)
  int64_t max_len_b = 50;
  int64_t max_len_limit = 0;     // and never more than this (0: no limit): the longest output the model can position
  int64_t nbest = 1;             // hypotheses returned per sentence (<= beam)
  double unk_penalty = 0.0;      // subtracted from unk's log-probability at every step
  int64_t no_repeat_ngram = 0;   // forbid repeating any n-gram of this size (0 = off)
  /// When a sentence's search ends. false (default): once no live beam can still beat its n-best
  /// finished ones under the length penalty (exact, may run long). true: as soon as it has `beam`
  /// finished hypotheses (fairseq's rule; CTranslate2's with patience 1): faster, rarely different.
  bool early_stop = false;
};

/// Throws std::invalid_argument naming the flag.
void validate(const BeamOptions& options);

/// A finished translation. `tokens` excludes bos and eos; `score` = log_prob / lp(|tokens| + 1).
struct Hypothesis {
  std::vector<int64_t> tokens;
  double score = 0.0;
  double log_prob = 0.0;
};

/// GNMT's length penalty ((5 + length) / 6)^alpha (Wu et al., 2016), length counting eos.
double length_penalty(int64_t length, double alpha);

/// Output tokens a sentence of `source_length` subwords may get, eos included (at least 1).
int64_t max_output_length(int64_t source_length, const BeamOptions& options);

/// Translates a batch. source: [B, S] (eos-terminated, pad-filled); source_lengths[b] is
/// sentence b's subword count without eos, for the maximum output length. Returns, per sentence,
/// up to `nbest` hypotheses, best first. Stops a sentence once no unfinished hypothesis can
/// still beat its n-best finished ones (or at the maximum length), and drops it from the batch.
std::vector<std::vector<Hypothesis>> beam_search(Scorer& scorer, const torch::Tensor& source,
                                                 const std::vector<int64_t>& source_lengths,
                                                 const BeamOptions& options);

}  // namespace tfm
