#pragma once
#include <cstddef>
#include <cstdint>

namespace tfm {

/// Sampling instead of search (back-translation's noisy outputs): each step draws the next token
/// from the model's distribution, cut to its top_k tokens and/or its top_p nucleus and sharpened or
/// flattened by the temperature, with a seeded generator so that a run can be repeated.
struct SamplingOptions {
  bool enabled = false;
  int64_t top_k = 0;         // draw among the k most probable tokens (0: no cut)
  double top_p = 1.0;        // draw within the smallest set holding this much probability (1: no cut)
  double temperature = 1.0;  // divides the log-probabilities before the draw
  uint64_t seed = 1;
};

/// How a batch is decoded. The beam is the paper's (§6.1: 4); the length penalty was chosen on
/// Multi30k validation (BENCHMARKS.md). The maximum output length grows with the source, so that
/// long (WMT) sentences are not cut short, but less than the paper's input + 50: the exact stopping
/// rule below runs each sentence until no live beam can win within that length, and a length
/// penalty above 1 lets a looping hypothesis win when it may run far past its source.
struct SearchOptions {
  int64_t beam = 4;             // 1 = greedy
  int64_t nbest = 1;            // hypotheses returned per sentence (<= beam)
  double length_penalty = 1.5;  // alpha in GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha
  double max_len_a = 1.5;       // maximum output length = a * source length + b (eos included)
  int64_t max_len_b = 10;
  int64_t max_len_limit = 0;    // and never more than this (0: no limit): the longest output the model can position
  int64_t min_len = 0;          // eos is not allowed before this many tokens
  double unk_penalty = 0.0;     // subtracted from unk's log-probability at every step
  int64_t no_repeat_ngram = 0;  // forbid repeating any n-gram of this size (0 = off)
  /// When a sentence's beam search ends. false (default): once no live beam can still beat its
  /// n-best finished ones under the length penalty (exact, may run long). true: as soon as it has
  /// `beam` finished hypotheses (fairseq's rule; CTranslate2's with patience 1): faster, rarely different.
  bool early_stop = false;
  SamplingOptions sampling;  // when enabled, replaces the search (beam is not used)
};

/// The widest beam validate() accepts: far wider than NMT uses (4-12), and small enough that the
/// beam's rows, candidates and scores cannot overflow a count.
constexpr int64_t kLargestBeam = 1024;

/// Throws std::invalid_argument naming the option.
void validate(const SearchOptions& options);

/// Output tokens a sentence of `source_length` subwords may get, eos included (at least 1).
int64_t max_output_length(int64_t source_length, const SearchOptions& options);

/// Whether a translation of `tokens` subwords (eos not counted) of a source of `source_length`
/// took all max_output_length() allows: search may have ended it there, cut short.
bool reaches_max_length(size_t tokens, int64_t source_length, const SearchOptions& options);

}  // namespace tfm
