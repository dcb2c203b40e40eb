#pragma once
// BLEU (Papineni et al., 2002) exactly as sacreBLEU 2.6.0 computes it, so that tfm's numbers can
// be quoted next to anyone else's: same tokenizers, same smoothing, same effective order, same
// brevity penalty, same reference-length rule.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/bleu_tokenizers.h"

namespace tfm {

/// n-gram orders 1..4, as in the paper and every WMT evaluation.
constexpr int kBleuMaxOrder = 4;

/// Smoothing of zero n-gram matches (Chen and Cherry, 2014, "A Systematic Comparison of
/// Smoothing Techniques for Sentence-Level BLEU").
enum class SmoothMethod {
  kExp,    // method 3 (mteval-v13a): the k-th zero-match order gets 1 / (2^k * total)
  kFloor,  // method 1: a zero match count becomes `smooth_value` (default 0.1)
  kAddK,   // method 2: add `smooth_value` (default 1) to matches and totals of orders 2..4
  kNone,
};

/// "exp", "floor", "add-k" or "none"; throws std::invalid_argument naming the choices.
SmoothMethod parse_smooth_method(const std::string& name);
/// The name in sacreBLEU's signature (`smooth:add-k[1.00]` without the value).
std::string smooth_method_name(SmoothMethod method);

/// How BLEU is computed. The defaults are sacreBLEU's.
struct BleuOptions {
  BleuTokenizer tokenizer = BleuTokenizer::k13a;
  bool lowercase = false;
  SmoothMethod smooth_method = SmoothMethod::kExp;
  /// Only for floor and add-k; unset means their defaults (0.1 and 1).
  std::optional<double> smooth_value;
  /// Average only over the orders the hypothesis has n-grams for; sacreBLEU turns this on for
  /// sentence-level scores (`-sl`), so a 3-word exact match scores 100 instead of 0.
  bool effective_order = false;
};

/// Throws std::invalid_argument for a smoothing value that is negative, not finite, or given
/// to a method that takes none.
void validate(const BleuOptions& options);

/// The smoothing value in effect: the user's, or the method's default (0 for exp and none).
double smooth_value_or_default(const BleuOptions& options);

/// BLEU's sufficient statistics. Corpus BLEU sums them over segments (it is not an average
/// of sentence scores). Counts are before any smoothing.
struct BleuStats {
  int64_t hyp_len = 0;                           // hypothesis tokens
  int64_t ref_len = 0;                           // tokens of the closest reference (ties: the shorter one)
  std::array<int64_t, kBleuMaxOrder> matches{};  // clipped n-gram matches, n = 1..4
  std::array<int64_t, kBleuMaxOrder> totals{};   // hypothesis n-grams, n = 1..4

  BleuStats& operator+=(const BleuStats& other);
};

struct BleuScore {
  double score = 0.0;                              // 0..100
  std::array<double, kBleuMaxOrder> precisions{};  // percent, after smoothing
  double bp = 0.0;                                 // brevity penalty
  double ratio = 0.0;                              // hyp_len / ref_len (0 when ref_len is 0)
  BleuStats stats;
};

/// Lowercases (if asked), strips trailing whitespace and tokenizes one segment, as sacreBLEU
/// does to hypotheses and references alike.
std::vector<std::string> bleu_preprocess(const std::string& segment, const BleuOptions& options);

/// Statistics of one hypothesis against its references (at least one; an empty reference is a
/// reference of length 0). An n-gram's matches are clipped by its largest count in any one
/// reference.
BleuStats bleu_segment_stats(const std::string& hypothesis, const std::vector<std::string>& references,
                             const BleuOptions& options);

/// The score from (summed) statistics.
BleuScore compute_bleu(const BleuStats& stats, const BleuOptions& options);

/// The same with the n-gram precisions computed in float32, as sacreBLEU's paired tests compute
/// them from their float32 arrays of resampled statistics (NumPy 2's promotion rules).
BleuScore compute_bleu_float32(const BleuStats& stats, const BleuOptions& options);

/// Each segment's statistics: hypotheses[i] against references[r][i] for every stream r (every
/// stream as long as `hypotheses`, std::invalid_argument otherwise).
std::vector<BleuStats> segment_bleu_stats(const std::vector<std::string>& hypotheses,
                                          const std::vector<std::vector<std::string>>& references,
                                          const BleuOptions& options);

/// Corpus BLEU. references[r][i] is reference r of segment i; every stream has as many
/// segments as `hypotheses` (std::invalid_argument otherwise).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const BleuOptions& options);

/// One segment scored on its own. Like sacreBLEU's sentence_score this uses `options` as
/// given: set effective_order for the scores of `sacrebleu -sl`.
BleuScore sentence_bleu(const std::string& hypothesis, const std::vector<std::string>& references,
                        const BleuOptions& options);

}  // namespace tfm
