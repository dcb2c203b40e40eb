#pragma once
// chrF (Popović, 2015) and chrF++ (Popović, 2017) exactly as sacreBLEU 2.6.0 computes them:
// character n-gram F-score (whitespace removed), optionally with word n-grams, statistics
// summed over the corpus, precision and recall averaged over the orders that have n-grams.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

/// sacreBLEU's defaults: chrF2 (6 character orders, beta 2). word_order 2 gives chrF++.
struct ChrfOptions {
  int char_order = 6;
  int word_order = 0;
  int beta = 2;  // recall weighs beta times as much as precision
  bool lowercase = false;
};

/// Throws std::invalid_argument for orders or beta out of range.
void validate(const ChrfOptions& options);

/// [hypothesis n-grams, reference n-grams, matched n-grams] for one order.
struct ChrfOrderStats {
  int64_t hyp = 0;
  int64_t ref = 0;
  int64_t match = 0;
};

/// One entry per order: character orders 1..char_order, then word orders 1..word_order.
/// Corpus chrF sums these over segments.
using ChrfStats = std::vector<ChrfOrderStats>;

struct ChrfScore {
  double score = 0.0;  // 0..100
  ChrfStats stats;
};

/// "chrF2", or "chrF2++" with two word orders (one '+' per word order), as sacreBLEU names it.
std::string chrf_name(const ChrfOptions& options);

/// The statistics of one hypothesis against its references. With several references, the one
/// with the best segment-level F-score supplies them (the first on a tie).
ChrfStats chrf_segment_stats(const std::string& hypothesis, const std::vector<std::string>& references,
                             const ChrfOptions& options);

/// The F-score (0..100) of (summed) statistics: precision and recall are averaged over the
/// orders where both hypothesis and reference have n-grams, then combined with beta.
double chrf_f_score(const ChrfStats& stats, const ChrfOptions& options);

/// The same in float32 arithmetic, as sacreBLEU's paired tests compute it from their float32
/// arrays of resampled statistics (NumPy 2's promotion rules).
float chrf_f_score_float32(const ChrfStats& stats, const ChrfOptions& options);

/// Adds `stats` into `sum` order by order (an empty `sum` takes its orders).
void add_chrf_stats(ChrfStats& sum, const ChrfStats& stats);

/// Each segment's statistics: hypotheses[i] against references[r][i] for every stream r (every
/// stream as long as `hypotheses`, std::invalid_argument otherwise).
std::vector<ChrfStats> segment_chrf_stats(const std::vector<std::string>& hypotheses,
                                          const std::vector<std::vector<std::string>>& references,
                                          const ChrfOptions& options);

/// Corpus chrF. references[r][i] is reference r of segment i (std::invalid_argument when a
/// stream's length differs from the hypotheses').
ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const ChrfOptions& options);

ChrfScore sentence_chrf(const std::string& hypothesis, const std::vector<std::string>& references,
                        const ChrfOptions& options);

}  // namespace tfm
