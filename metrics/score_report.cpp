#include "metrics/score_report.h"

#include <algorithm>
#include <cstdio>

namespace tfm {

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

namespace {

std::string prefixed(const std::string& name, const std::string& signature) {
  return signature.empty() ? name : name + "|" + signature;
}

/// Copies every key of `from` that `into` lacks, keeping from's order.
void merge_missing(nlohmann::ordered_json& into, const nlohmann::ordered_json& from) {
  for (const auto& item : from.items()) {
    if (!into.contains(item.key())) into[item.key()] = item.value();
  }
}

}  // namespace

std::string bleu_details(const BleuScore& score) {
  std::string precisions;
  for (const double precision : score.precisions) {
    if (!precisions.empty()) precisions += '/';
    precisions += fixed(precision, 1);
  }
  return precisions + " (BP = " + fixed(score.bp, 3) + " ratio = " + fixed(score.ratio, 3) +
         " hyp_len = " + std::to_string(score.stats.hyp_len) + " ref_len = " + std::to_string(score.stats.ref_len) +
         ")";
}

std::string bleu_line(const BleuScore& score, const std::string& signature, int decimals) {
  return prefixed("BLEU", signature) + " = " + fixed(score.score, decimals) + " " + bleu_details(score);
}

std::string chrf_line(const ChrfScore& score, const ChrfOptions& options, const std::string& signature, int decimals) {
  return prefixed(chrf_name(options), signature) + " = " + fixed(score.score, decimals);
}

std::vector<std::string> align_on_equals(const std::vector<std::string>& lines) {
  size_t width = 0;
  for (const auto& line : lines) width = std::max(width, std::min(line.find(" = "), line.size()));
  std::vector<std::string> aligned;
  for (const auto& line : lines) {
    const size_t at = line.find(" = ");
    aligned.push_back(at == std::string::npos ? line : std::string(width - at, ' ') + line);
  }
  return aligned;
}

nlohmann::ordered_json metric_json(const std::string& name, const std::string& signature) {
  nlohmann::ordered_json object = {{"name", name}, {"signature", signature}};
  for (size_t start = 0; start < signature.size();) {
    const size_t end = std::min(signature.find('|', start), signature.size());
    const std::string field = signature.substr(start, end - start);
    const size_t colon = field.find(':');
    if (colon != std::string::npos) object[field.substr(0, colon)] = field.substr(colon + 1);
    start = end + 1;
  }
  return object;
}

nlohmann::ordered_json bleu_stats_json(const BleuScore& score) {
  return {{"score", score.score},         {"verbose_score", bleu_details(score)}, {"counts", score.stats.matches},
          {"totals", score.stats.totals}, {"precisions", score.precisions},       {"bp", score.bp},
          {"ratio", score.ratio},         {"hyp_len", score.stats.hyp_len},       {"ref_len", score.stats.ref_len}};
}

nlohmann::ordered_json chrf_stats_json(const ChrfScore& score, const ChrfOptions& options) {
  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  const auto char_orders = static_cast<size_t>(options.char_order);
  for (size_t i = 0; i < score.stats.size(); ++i) {
    const std::string order =
        i < char_orders ? "char" + std::to_string(i + 1) : "word" + std::to_string(i + 1 - char_orders);
    const ChrfOrderStats& counts = score.stats[i];
    stats.push_back({{"order", order}, {"hyp", counts.hyp}, {"ref", counts.ref}, {"match", counts.match}});
  }
  return {{"score", score.score}, {"stats", stats}};
}

nlohmann::ordered_json bleu_json(const BleuScore& score, const std::string& signature) {
  const nlohmann::ordered_json stats = bleu_stats_json(score);
  nlohmann::ordered_json object = {
      {"name", "BLEU"}, {"score", score.score}, {"signature", signature}, {"verbose_score", stats["verbose_score"]}};
  merge_missing(object, metric_json("BLEU", signature));
  merge_missing(object, stats);
  return object;
}

nlohmann::ordered_json chrf_json(const ChrfScore& score, const ChrfOptions& options, const std::string& signature) {
  nlohmann::ordered_json object = {{"name", chrf_name(options)}, {"score", score.score}, {"signature", signature}};
  merge_missing(object, metric_json(chrf_name(options), signature));
  object["char_order"] = options.char_order;
  object["word_order"] = options.word_order;
  object["beta"] = options.beta;
  merge_missing(object, chrf_stats_json(score, options));
  return object;
}

}  // namespace tfm
