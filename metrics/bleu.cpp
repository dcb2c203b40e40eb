#include "metrics/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "text/option_names.h"
#include "text/unicode_text.h"

namespace tfm {
namespace {

/// Counts of each n-gram, one map per order. Keys are the tokens joined by ' ', which is
/// unambiguous because tokens never contain whitespace.
using NgramCounts = std::array<std::unordered_map<std::string, int64_t>, kBleuMaxOrder>;

/// sacreBLEU's my_log: log(0) is a very negative number instead of -inf, so a zero precision
/// drives the score to 0 without producing NaN.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

NgramCounts count_ngrams(const std::vector<std::string>& tokens) {
  NgramCounts counts;
  for (size_t n = 1; n <= kBleuMaxOrder; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      std::string key = tokens[i];
      for (size_t k = 1; k < n; ++k) (key += ' ') += tokens[i + k];
      ++counts[n - 1][key];
    }
  }
  return counts;
}

/// The reference length closest to the hypothesis length; on a tie the shorter reference.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best = ref_lens.front();
  for (const int64_t len : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - len);
    const int64_t best_diff = std::llabs(hyp_len - best);
    if (diff < best_diff || (diff == best_diff && len < best)) best = len;
  }
  return best;
}

double brevity_penalty(int64_t hyp_len, int64_t ref_len) {
  if (hyp_len >= ref_len) return 1.0;
  return hyp_len > 0 ? std::exp(1.0 - static_cast<double>(ref_len) / static_cast<double>(hyp_len)) : 0.0;
}

}  // namespace

SmoothMethod parse_smooth_method(const std::string& name) {
  if (name == "exp") return SmoothMethod::kExp;
  if (name == "floor") return SmoothMethod::kFloor;
  if (name == "add-k") return SmoothMethod::kAddK;
  if (name == "none") return SmoothMethod::kNone;
  throw std::invalid_argument(option_name("smooth_method") + " " + name +
                              ": unknown method (use exp, floor, add-k or none)");
}

std::string smooth_method_name(SmoothMethod method) {
  switch (method) {
    case SmoothMethod::kExp: return "exp";
    case SmoothMethod::kFloor: return "floor";
    case SmoothMethod::kAddK: return "add-k";
    case SmoothMethod::kNone: return "none";
  }
  throw std::logic_error("unknown SmoothMethod");
}

void validate(const BleuOptions& options) {
  if (!options.smooth_value) return;
  const double value = *options.smooth_value;
  if (options.smooth_method != SmoothMethod::kFloor && options.smooth_method != SmoothMethod::kAddK) {
    throw std::invalid_argument(option_name("smooth_value") + " applies to " + option_name("smooth_method") +
                                " floor or add-k only, not " + smooth_method_name(options.smooth_method));
  }
  if (!std::isfinite(value) || value < 0.0) {
    throw std::invalid_argument(option_name("smooth_value") + " " + std::to_string(value) + ": must be a number >= 0");
  }
}

double smooth_value_or_default(const BleuOptions& options) {
  if (options.smooth_value) return *options.smooth_value;
  if (options.smooth_method == SmoothMethod::kFloor) return 0.1;
  if (options.smooth_method == SmoothMethod::kAddK) return 1.0;
  return 0.0;
}

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  hyp_len += other.hyp_len;
  ref_len += other.ref_len;
  for (size_t n = 0; n < kBleuMaxOrder; ++n) {
    matches[n] += other.matches[n];
    totals[n] += other.totals[n];
  }
  return *this;
}

std::vector<std::string> bleu_preprocess(const std::string& segment, const BleuOptions& options) {
  return tokenize_to_tokens(options.tokenizer, rstrip_python(options.lowercase ? lowercase(segment) : segment));
}

BleuStats bleu_segment_stats(const std::string& hypothesis, const std::vector<std::string>& references,
                             const BleuOptions& options) {
  if (references.empty()) throw std::invalid_argument("BLEU needs at least one reference per segment");
  NgramCounts clip;  // the largest count of each n-gram in any single reference
  std::vector<int64_t> ref_lens;
  for (const auto& reference : references) {
    const auto tokens = bleu_preprocess(reference, options);
    ref_lens.push_back(static_cast<int64_t>(tokens.size()));
    const NgramCounts counts = count_ngrams(tokens);
    for (size_t n = 0; n < kBleuMaxOrder; ++n) {
      for (const auto& [ngram, count] : counts[n]) {
        int64_t& best = clip[n][ngram];
        best = std::max(best, count);
      }
    }
  }
  const auto tokens = bleu_preprocess(hypothesis, options);
  BleuStats stats;
  stats.hyp_len = static_cast<int64_t>(tokens.size());
  stats.ref_len = closest_ref_len(stats.hyp_len, ref_lens);
  const NgramCounts counts = count_ngrams(tokens);
  for (size_t n = 0; n < kBleuMaxOrder; ++n) {
    for (const auto& [ngram, count] : counts[n]) {
      stats.totals[n] += count;
      const auto found = clip[n].find(ngram);
      if (found != clip[n].end()) stats.matches[n] += std::min(count, found->second);
    }
  }
  return stats;
}

namespace {

/// compute_bleu with the precisions computed in `Real`: double, or float as sacreBLEU computes
/// them from float32 statistics (NumPy 2 keeps float32 when a Python float meets a float32).
template <typename Real>
BleuScore compute_bleu_in(const BleuStats& stats, const BleuOptions& options) {
  BleuScore result;
  result.stats = stats;
  result.bp = brevity_penalty(stats.hyp_len, stats.ref_len);
  result.ratio = stats.ref_len > 0 ? static_cast<double>(stats.hyp_len) / static_cast<double>(stats.ref_len) : 0.0;
  // No match at any order: 0 whatever the smoothing (sacreBLEU issue #141).
  if (std::all_of(stats.matches.begin(), stats.matches.end(), [](int64_t m) { return m == 0; })) return result;

  const double value = smooth_value_or_default(options);
  double exp_denominator = 1.0;   // doubles at each zero-match order (method "exp")
  size_t orders = kBleuMaxOrder;  // orders averaged in the geometric mean
  for (size_t n = 1; n <= kBleuMaxOrder; ++n) {
    auto matches = static_cast<Real>(stats.matches[n - 1]);
    auto total = static_cast<Real>(stats.totals[n - 1]);
    if (options.smooth_method == SmoothMethod::kAddK && n > 1) {
      matches += static_cast<Real>(value);
      total += static_cast<Real>(value);
    }
    // No hypothesis n-grams of this order: it and the higher ones stay 0. Without effective
    // order that zero still enters the mean, so the score is 0.
    if (total == Real(0)) break;
    if (options.effective_order) orders = n;
    Real precision = 0;
    if (matches > Real(0)) {
      precision = Real(100) * matches / total;
    } else if (options.smooth_method == SmoothMethod::kExp) {
      exp_denominator *= 2.0;
      precision = Real(100) / (static_cast<Real>(exp_denominator) * total);
    } else if (options.smooth_method == SmoothMethod::kFloor) {
      precision = static_cast<Real>(100.0 * value) / total;
    }
    result.precisions[n - 1] = static_cast<double>(precision);
  }
  double log_sum = 0.0;
  for (size_t n = 0; n < orders; ++n) log_sum += floored_log(result.precisions[n]);
  result.score = result.bp * std::exp(log_sum / static_cast<double>(orders));
  return result;
}

}  // namespace

BleuScore compute_bleu(const BleuStats& stats, const BleuOptions& options) {
  return compute_bleu_in<double>(stats, options);
}

BleuScore compute_bleu_float32(const BleuStats& stats, const BleuOptions& options) {
  return compute_bleu_in<float>(stats, options);
}

std::vector<BleuStats> segment_bleu_stats(const std::vector<std::string>& hypotheses,
                                          const std::vector<std::vector<std::string>>& references,
                                          const BleuOptions& options) {
  if (references.empty()) throw std::invalid_argument("BLEU needs at least one reference stream");
  for (const auto& stream : references) {
    if (stream.size() != hypotheses.size()) {
      throw std::invalid_argument("BLEU: " + std::to_string(hypotheses.size()) + " hypotheses but a reference " +
                                  "stream of " + std::to_string(stream.size()) + " segments");
    }
  }
  std::vector<BleuStats> stats;
  stats.reserve(hypotheses.size());
  std::vector<std::string> segment_refs(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t r = 0; r < references.size(); ++r) segment_refs[r] = references[r][i];
    stats.push_back(bleu_segment_stats(hypotheses[i], segment_refs, options));
  }
  return stats;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const BleuOptions& options) {
  BleuStats total;
  for (const auto& stats : segment_bleu_stats(hypotheses, references, options)) total += stats;
  return compute_bleu(total, options);
}

BleuScore sentence_bleu(const std::string& hypothesis, const std::vector<std::string>& references,
                        const BleuOptions& options) {
  return compute_bleu(bleu_segment_stats(hypothesis, references, options), options);
}

}  // namespace tfm
