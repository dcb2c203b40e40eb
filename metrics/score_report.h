#pragma once
// Scores as text lines and JSON objects, in the shape sacreBLEU's command line prints them, so
// tools and people that read sacreBLEU's output can read tfm's. JSON objects keep sacreBLEU's
// key order (ordered_json); scores in JSON are at full precision.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/bleu.h"
#include "metrics/chrf.h"

namespace tfm {

/// printf-style fixed point; like Python's f"{x:.Nf}" it rounds the exact binary value.
std::string fixed(double value, int decimals);

/// sacreBLEU's verbose part of a BLEU score:
/// "68.5/47.5/29.4/17.1 (BP = 1.000 ratio = 1.014 hyp_len = 73 ref_len = 72)".
std::string bleu_details(const BleuScore& score);

/// "BLEU|<signature> = 35.76 <details>" (or "BLEU = 35.76 <details>" with an empty signature);
/// `decimals` is the score's precision (sacreBLEU's --width).
std::string bleu_line(const BleuScore& score, const std::string& signature, int decimals = 2);

/// "chrF2|<signature> = 54.11" (chrF has no details).
std::string chrf_line(const ChrfScore& score, const ChrfOptions& options, const std::string& signature,
                      int decimals = 2);

/// Right-aligns what precedes the first " = " of each line so the '=' signs line up, as
/// sacreBLEU does when it prints several metrics.
std::vector<std::string> align_on_equals(const std::vector<std::string>& lines);

/// {"name", "signature", then each "key:value" field of the signature as "key": "value"}.
nlohmann::ordered_json metric_json(const std::string& name, const std::string& signature);

/// score, verbose_score, counts, totals (before smoothing), precisions (after), bp, ratio,
/// hyp_len, ref_len.
nlohmann::ordered_json bleu_stats_json(const BleuScore& score);

/// score, then per order {"order": "char1".."char6", "word1".., "hyp", "ref", "match"} in "stats".
nlohmann::ordered_json chrf_stats_json(const ChrfScore& score, const ChrfOptions& options);

/// A corpus BLEU result as sacreBLEU's JSON has it (name, score, signature, verbose_score,
/// signature fields), followed by the rest of bleu_stats_json.
nlohmann::ordered_json bleu_json(const BleuScore& score, const std::string& signature);

/// name, score, signature, signature fields, char_order, word_order, beta, stats.
nlohmann::ordered_json chrf_json(const ChrfScore& score, const ChrfOptions& options, const std::string& signature);

}  // namespace tfm
