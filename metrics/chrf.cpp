#include "metrics/chrf.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "text/option_names.h"
#include "text/unicode_text.h"

namespace tfm {
namespace {

/// Counts of the n-grams of one order. Character n-grams are keyed by their code points, word
/// n-grams by their words joined with ' ' (words never contain whitespace).
using NgramCounts = std::unordered_map<std::u32string, int64_t>;

// Upper limits that keep a mistyped flag from allocating millions of tables per segment.
constexpr int kMaxCharOrder = 20;
constexpr int kMaxWordOrder = 10;

/// Python's string.punctuation: the only characters chrF++ splits off words (ASCII only).
bool is_ascii_punctuation(char32_t c) {
  static const std::u32string kPunctuation = U"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  return kPunctuation.find(c) != std::u32string::npos;
}

/// Character n-grams of orders 1..max_order, with all whitespace removed first.
std::vector<NgramCounts> char_ngrams(const std::u32string& text, int max_order) {
  std::u32string chars;
  for (const char32_t c : text) {
    if (!is_python_space(c)) chars += c;
  }
  std::vector<NgramCounts> counts(static_cast<size_t>(max_order));
  for (size_t n = 1; n <= counts.size(); ++n) {
    for (size_t i = 0; i + n <= chars.size(); ++i) ++counts[n - 1][chars.substr(i, n)];
  }
  return counts;
}

/// chrF++'s word split (from Popović's chrF++.py): whitespace words, with one trailing
/// punctuation character split off, or else one leading one. "(hi)" gives "(hi" and ")".
std::vector<std::u32string> chrf_words(const std::u32string& text) {
  std::vector<std::u32string> words;
  for (auto& word : split_python(text)) {
    if (word.size() > 1 && is_ascii_punctuation(word.back())) {
      words.push_back(word.substr(0, word.size() - 1));
      words.push_back(word.substr(word.size() - 1));
    } else if (word.size() > 1 && is_ascii_punctuation(word.front())) {
      words.push_back(word.substr(0, 1));
      words.push_back(word.substr(1));
    } else {
      words.push_back(std::move(word));
    }
  }
  return words;
}

NgramCounts word_ngrams(const std::vector<std::u32string>& words, size_t n) {
  NgramCounts counts;
  for (size_t i = 0; i + n <= words.size(); ++i) {
    std::u32string key = words[i];
    for (size_t k = 1; k < n; ++k) (key += U' ') += words[i + k];
    ++counts[key];
  }
  return counts;
}

/// All n-gram counts of a segment, in the order of ChrfStats.
std::vector<NgramCounts> all_ngrams(const std::string& segment, const ChrfOptions& options) {
  const std::u32string text = utf8_to_u32(options.lowercase ? lowercase(segment) : segment);
  std::vector<NgramCounts> counts = char_ngrams(text, options.char_order);
  if (options.word_order > 0) {
    const auto words = chrf_words(text);
    for (size_t n = 1; n <= static_cast<size_t>(options.word_order); ++n) counts.push_back(word_ngrams(words, n));
  }
  return counts;
}

ChrfOrderStats match_stats(const NgramCounts& hyp, const NgramCounts& ref) {
  ChrfOrderStats stats;
  int64_t hyp_count = 0;
  for (const auto& [ngram, count] : hyp) {
    hyp_count += count;
    const auto found = ref.find(ngram);
    if (found != ref.end()) stats.match += std::min(count, found->second);
  }
  for (const auto& entry : ref) stats.ref += entry.second;
  // sacreBLEU counts no hypothesis n-grams for an order the reference lacks entirely.
  stats.hyp = ref.empty() ? 0 : hyp_count;
  return stats;
}

}  // namespace

void validate(const ChrfOptions& options) {
  if (options.char_order < 1 || options.char_order > kMaxCharOrder) {
    throw std::invalid_argument(option_name("chrf_char_order") + " " + std::to_string(options.char_order) +
                                ": must be 1.." + std::to_string(kMaxCharOrder));
  }
  if (options.word_order < 0 || options.word_order > kMaxWordOrder) {
    throw std::invalid_argument(option_name("chrf_word_order") + " " + std::to_string(options.word_order) +
                                ": must be 0.." + std::to_string(kMaxWordOrder) + " (2 gives chrF++)");
  }
  if (options.beta < 0)
    throw std::invalid_argument(option_name("chrf_beta") + " " + std::to_string(options.beta) + ": must be >= 0");
}

std::string chrf_name(const ChrfOptions& options) {
  return "chrF" + std::to_string(options.beta) + std::string(static_cast<size_t>(options.word_order), '+');
}

ChrfStats chrf_segment_stats(const std::string& hypothesis, const std::vector<std::string>& references,
                             const ChrfOptions& options) {
  if (references.empty()) throw std::invalid_argument("chrF needs at least one reference per segment");
  const auto hyp = all_ngrams(hypothesis, options);
  ChrfStats best;
  double best_score = -1.0;
  for (const auto& reference : references) {
    const auto ref = all_ngrams(reference, options);
    ChrfStats stats;
    for (size_t order = 0; order < hyp.size(); ++order) stats.push_back(match_stats(hyp[order], ref[order]));
    const double score = chrf_f_score(stats, options);
    if (score > best_score) {
      best_score = score;
      best = std::move(stats);
    }
  }
  return best;
}

namespace {

/// chrf_f_score in `Real`: double, or float as sacreBLEU computes it from float32 statistics.
template <typename Real>
Real chrf_f_score_in(const ChrfStats& stats, const ChrfOptions& options) {
  Real precision = 0;
  Real recall = 0;
  int orders = 0;  // "effective order": orders where hypothesis and reference have n-grams
  for (const auto& order : stats) {
    if (order.hyp > 0 && order.ref > 0) {
      precision += static_cast<Real>(order.match) / static_cast<Real>(order.hyp);
      recall += static_cast<Real>(order.match) / static_cast<Real>(order.ref);
      ++orders;
    }
  }
  if (orders > 0) {
    precision /= static_cast<Real>(orders);
    recall /= static_cast<Real>(orders);
  }
  if (precision + recall == Real(0)) return 0;
  const auto factor = static_cast<Real>(options.beta * options.beta);
  Real score = (Real(1) + factor) * precision * recall;
  score /= factor * precision + recall;
  return Real(100) * score;
}

}  // namespace

double chrf_f_score(const ChrfStats& stats, const ChrfOptions& options) {
  return chrf_f_score_in<double>(stats, options);
}

float chrf_f_score_float32(const ChrfStats& stats, const ChrfOptions& options) {
  return chrf_f_score_in<float>(stats, options);
}

void add_chrf_stats(ChrfStats& sum, const ChrfStats& stats) {
  if (sum.size() < stats.size()) sum.resize(stats.size());
  for (size_t order = 0; order < stats.size(); ++order) {
    sum[order].hyp += stats[order].hyp;
    sum[order].ref += stats[order].ref;
    sum[order].match += stats[order].match;
  }
}

std::vector<ChrfStats> segment_chrf_stats(const std::vector<std::string>& hypotheses,
                                          const std::vector<std::vector<std::string>>& references,
                                          const ChrfOptions& options) {
  if (references.empty()) throw std::invalid_argument("chrF needs at least one reference stream");
  for (const auto& stream : references) {
    if (stream.size() != hypotheses.size()) {
      throw std::invalid_argument("chrF: " + std::to_string(hypotheses.size()) + " hypotheses but a reference " +
                                  "stream of " + std::to_string(stream.size()) + " segments");
    }
  }
  std::vector<ChrfStats> stats;
  stats.reserve(hypotheses.size());
  std::vector<std::string> segment_refs(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t r = 0; r < references.size(); ++r) segment_refs[r] = references[r][i];
    stats.push_back(chrf_segment_stats(hypotheses[i], segment_refs, options));
  }
  return stats;
}

ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const ChrfOptions& options) {
  ChrfScore result;
  result.stats.resize(static_cast<size_t>(options.char_order + options.word_order));
  for (const auto& stats : segment_chrf_stats(hypotheses, references, options)) add_chrf_stats(result.stats, stats);
  result.score = chrf_f_score(result.stats, options);
  return result;
}

ChrfScore sentence_chrf(const std::string& hypothesis, const std::vector<std::string>& references,
                        const ChrfOptions& options) {
  ChrfScore result;
  result.stats = chrf_segment_stats(hypothesis, references, options);
  result.score = chrf_f_score(result.stats, options);
  return result;
}

}  // namespace tfm
