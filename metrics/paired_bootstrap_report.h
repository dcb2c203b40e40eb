#pragma once
// The paired bootstrap test's results as text lines and JSON: per system, each metric's score,
// the resamples' mean and 95% interval, and the p-value against the baseline, with sacreBLEU's
// signature fields for the test (bs:N|seed:S).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/paired_bootstrap.h"

namespace tfm {

/// One metric over every system, systems[0] the baseline.
struct PairedMetricResult {
  std::string name;       // "BLEU", "chrF2", ...
  std::string signature;  // with the test's fields (paired_bootstrap_signature)
  std::vector<BootstrapScore> systems;
};

/// "(μ = 28.33 ± 1.39)": the resamples' mean and 95% half-width, as sacreBLEU prints them.
std::string interval_text(const BootstrapScore& score, int decimals);

/// sacreBLEU's signature of a paired test: `bs:N|seed:S` after the first field (nrefs).
std::string paired_bootstrap_signature(const std::string& signature, const PairedBootstrapOptions& test);

/// A header line, one line per system ("28.34 (μ = 28.33 ± 1.39)" per metric, "p = 0.0290*" where
/// p < 0.05 after a compared system's), then one signature line per metric.
std::vector<std::string> paired_bootstrap_lines(const std::vector<std::string>& systems,
                                                const std::vector<PairedMetricResult>& metrics,
                                                const PairedBootstrapOptions& test, int decimals);

/// {"test", "samples", "seed", "systems": [{"hyp", "baseline", "scores": [{"name", "score",
/// "mean", "ci", "p_value" (compared systems only), "signature"}]}]}, at full precision.
nlohmann::ordered_json paired_bootstrap_json(const std::vector<std::string>& systems,
                                             const std::vector<PairedMetricResult>& metrics,
                                             const PairedBootstrapOptions& test);

}  // namespace tfm
