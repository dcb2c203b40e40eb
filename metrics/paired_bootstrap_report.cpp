#include "metrics/paired_bootstrap_report.h"

#include <algorithm>

#include "metrics/score_report.h"

namespace tfm {
namespace {

constexpr double kSignificance = 0.05;

std::string p_value_text(const BootstrapScore& score) {
  if (!score.p_value) return "";
  return "p = " + fixed(*score.p_value, 4) + (*score.p_value < kSignificance ? "*" : "");
}

/// Code points in UTF-8 `text`: the columns it takes (μ and ± are two bytes each).
size_t columns(const std::string& text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U; }));
}

std::string padded(const std::string& text, size_t width) {
  const size_t used = columns(text);
  return text + std::string(width > used ? width - used : 0, ' ');
}

}  // namespace

std::string interval_text(const BootstrapScore& score, int decimals) {
  return "(μ = " + fixed(score.mean, decimals) + " ± " + fixed(score.ci, decimals) + ")";
}

std::string paired_bootstrap_signature(const std::string& signature, const PairedBootstrapOptions& test) {
  const size_t first = signature.find('|');
  const std::string fields = "bs:" + std::to_string(test.samples) + "|seed:" + std::to_string(test.seed);
  if (first == std::string::npos) return signature + "|" + fields;
  return signature.substr(0, first + 1) + fields + signature.substr(first);
}

std::vector<std::string> paired_bootstrap_lines(const std::vector<std::string>& systems,
                                                const std::vector<PairedMetricResult>& metrics,
                                                const PairedBootstrapOptions& test, int decimals) {
  // cells[row][column]: row 0 the header, column 0 the system's name, then a metric and its p-value
  std::vector<std::vector<std::string>> cells(systems.size() + 1);
  cells[0].push_back("system");
  for (const auto& metric : metrics) {
    cells[0].push_back(metric.name + " (μ ± 95% CI)");
    cells[0].emplace_back("");
  }
  for (size_t s = 0; s < systems.size(); ++s) {
    auto& row = cells[s + 1];
    row.push_back(s == 0 ? "baseline: " + systems[s] : systems[s]);
    for (const auto& metric : metrics) {
      row.push_back(fixed(metric.systems[s].score, decimals) + " " + interval_text(metric.systems[s], decimals));
      row.push_back(p_value_text(metric.systems[s]));
    }
  }
  std::vector<size_t> widths(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], columns(row[c]));
  }
  std::vector<std::string> lines = {"paired bootstrap resampling: " + std::to_string(test.samples) +
                                    " resamples of the test set (seed " + std::to_string(test.seed) +
                                    "), each system against the baseline; * marks p < " + fixed(kSignificance, 2)};
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) line += (c == 0 ? "" : "  ") + padded(row[c], widths[c]);
    line.erase(line.find_last_not_of(' ') + 1);
    lines.push_back(line);
  }
  for (const auto& metric : metrics) lines.push_back(metric.name + "|" + metric.signature);
  return lines;
}

nlohmann::ordered_json paired_bootstrap_json(const std::vector<std::string>& systems,
                                             const std::vector<PairedMetricResult>& metrics,
                                             const PairedBootstrapOptions& test) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t s = 0; s < systems.size(); ++s) {
    nlohmann::ordered_json scores = nlohmann::ordered_json::array();
    for (const auto& metric : metrics) {
      const BootstrapScore& score = metric.systems[s];
      nlohmann::ordered_json entry = {
          {"name", metric.name}, {"score", score.score}, {"mean", score.mean}, {"ci", score.ci}};
      if (score.p_value) entry["p_value"] = *score.p_value;
      entry["signature"] = metric.signature;
      scores.push_back(entry);
    }
    rows.push_back({{"hyp", systems[s]}, {"baseline", s == 0}, {"scores", scores}});
  }
  return {{"test", "paired-bs"}, {"samples", test.samples}, {"seed", test.seed}, {"systems", rows}};
}

}  // namespace tfm
