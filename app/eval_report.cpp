#include "app/eval_report.h"

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "metrics/paired_bootstrap.h"
#include "metrics/paired_bootstrap_report.h"
#include "metrics/score_report.h"
#include "metrics/signature.h"

namespace tfm {
namespace {

/// Translation speed, in translate-and-score mode.
nlohmann::ordered_json speed_json(const EvalInputs& inputs) {
  const double seconds = std::max(inputs.seconds, 1e-9);
  return {{"sentences", inputs.hyps.size()},
          {"seconds", inputs.seconds},
          {"sentences_per_second", inputs.hyps.size() / seconds},
          {"target_tokens_per_second", inputs.target_tokens / seconds}};
}

nlohmann::ordered_json report_header(const EvalCommandOptions& options, const EvalInputs& inputs) {
  const std::string hyp = options.models.empty() ? options.hyps[0] : "translation of " + options.src;
  return {{"hyp", hyp},
          {"refs", options.refs},
          {"num_segments", inputs.hyps.size()},
          {"level", options.sentence_level ? "sentence" : "corpus"}};
}

void print_json(const nlohmann::ordered_json& report) {
  // indent 1 and raw UTF-8, like sacreBLEU's json.dumps(indent=1, ensure_ascii=False)
  std::cout << report.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

/// sacreBLEU's seed for resampling (--confidence, --paired-bs): SACREBLEU_SEED, default 12345; "none" draws one
/// (printed with the results, so that the run can be repeated).
uint64_t bootstrap_seed() {
  const char* value = std::getenv("SACREBLEU_SEED");
  if (value == nullptr || *value == '\0') return PairedBootstrapOptions{}.seed;
  const std::string text = value;
  if (text == "none" || text == "None")
    return (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 20) {
    try {
      return std::stoull(text);
    } catch (const std::out_of_range&) {
    }
  }
  throw std::invalid_argument("SACREBLEU_SEED=" + text + ": must be a non-negative integer below 2^64, or none");
}

/// " (μ = 28.33 ± 1.39)" after the score of a sacreBLEU line, as `sacrebleu --confidence` prints it.
std::string with_interval(const std::string& line, const BootstrapScore& interval, int decimals) {
  const size_t score = line.find(" = ") + 3;
  const size_t end = std::min(line.find(' ', score), line.size());
  return line.substr(0, end) + " " + interval_text(interval, decimals) + line.substr(end);
}

void add_interval(nlohmann::ordered_json& metric, const BootstrapScore& interval) {
  metric["confidence_mean"] = interval.mean;
  metric["confidence_var"] = interval.ci;  // sacreBLEU's name for the half-width
  metric["confidence"] = "μ = " + fixed(interval.mean, 2) + " ± " + fixed(interval.ci, 2);
}

}  // namespace

void print_corpus_scores(const EvalCommandOptions& options, const EvalPlan& plan, const EvalInputs& inputs) {
  const size_t num_refs = inputs.refs.size();
  std::vector<std::string> lines;
  nlohmann::ordered_json scores = nlohmann::ordered_json::array();
  PairedBootstrapOptions resampling;
  if (options.confidence) {
    resampling.samples = options.confidence_n;
    resampling.seed = bootstrap_seed();
  }
  // --confidence: the signature carries bs:N|seed:S, the line and JSON the interval.
  const auto finish = [&](std::string line, nlohmann::ordered_json json,
                          const std::optional<BootstrapScore>& interval) {
    if (interval) {
      line = with_interval(line, *interval, options.width);
      add_interval(json, *interval);
    }
    lines.push_back(line);
    scores.push_back(json);
  };
  if (plan.bleu) {
    const BleuScore score = corpus_bleu(inputs.hyps, inputs.refs, plan.bleu_options);
    std::string signature = bleu_signature(plan.bleu_options, num_refs);
    std::optional<BootstrapScore> interval;
    if (options.confidence) {
      signature = paired_bootstrap_signature(signature, resampling);
      interval = bootstrap_interval_bleu(segment_bleu_stats(inputs.hyps, inputs.refs, plan.bleu_options),
                                         plan.bleu_options, resampling);
    }
    finish(bleu_line(score, signature, options.width), bleu_json(score, signature), interval);
  }
  if (plan.chrf) {
    const ChrfScore score = corpus_chrf(inputs.hyps, inputs.refs, plan.chrf_options);
    std::string signature = chrf_signature(plan.chrf_options, num_refs);
    std::optional<BootstrapScore> interval;
    if (options.confidence) {
      signature = paired_bootstrap_signature(signature, resampling);
      interval = bootstrap_interval_chrf(segment_chrf_stats(inputs.hyps, inputs.refs, plan.chrf_options),
                                         plan.chrf_options, resampling);
    }
    finish(chrf_line(score, plan.chrf_options, signature, options.width),
           chrf_json(score, plan.chrf_options, signature), interval);
  }
  const bool translated = !options.models.empty();
  if (options.json) {
    nlohmann::ordered_json report = report_header(options, inputs);
    report["scores"] = scores;
    if (translated) report["speed"] = speed_json(inputs);
    print_json(report);
    return;
  }
  for (const auto& line : align_on_equals(lines)) std::cout << line << '\n';
  if (translated) {
    const auto speed = speed_json(inputs);
    std::cout << fmt::format("speed: {} sentences in {:.2f} s = {:.1f} sentences/s, {:.1f} target subwords/s\n",
                             inputs.hyps.size(), inputs.seconds, speed["sentences_per_second"].get<double>(),
                             speed["target_tokens_per_second"].get<double>());
  }
}

void print_sentence_scores(const EvalCommandOptions& options, const EvalPlan& plan, const EvalInputs& inputs) {
  const size_t num_refs = inputs.refs.size();
  const std::string signature =
      plan.bleu ? bleu_signature(plan.bleu_options, num_refs) : chrf_signature(plan.chrf_options, num_refs);
  nlohmann::ordered_json segments = nlohmann::ordered_json::array();
  std::vector<std::string> refs(num_refs);
  for (size_t i = 0; i < inputs.hyps.size(); ++i) {
    for (size_t r = 0; r < num_refs; ++r) refs[r] = inputs.refs[r][i];
    if (plan.bleu) {
      const BleuScore score = sentence_bleu(inputs.hyps[i], refs, plan.bleu_options);
      if (!options.json) std::cout << bleu_line(score, signature, options.width) << '\n';
      segments.push_back(bleu_stats_json(score));
    } else {
      const ChrfScore score = sentence_chrf(inputs.hyps[i], refs, plan.chrf_options);
      if (!options.json) std::cout << chrf_line(score, plan.chrf_options, signature, options.width) << '\n';
      segments.push_back(chrf_stats_json(score, plan.chrf_options));
    }
  }
  if (!options.json) return;
  nlohmann::ordered_json metric = metric_json(plan.bleu ? "BLEU" : chrf_name(plan.chrf_options), signature);
  metric["segments"] = segments;
  nlohmann::ordered_json report = report_header(options, inputs);
  report["scores"] = nlohmann::ordered_json::array({metric});
  print_json(report);
}

void print_paired_test(const EvalCommandOptions& options, const EvalPlan& plan, const EvalInputs& inputs) {
  std::vector<const std::vector<std::string>*> systems = {&inputs.hyps};
  for (const auto& hyps : inputs.compared) systems.push_back(&hyps);
  PairedBootstrapOptions test;
  test.samples = options.paired_bs_n;
  test.seed = bootstrap_seed();
  const size_t num_refs = inputs.refs.size();
  std::vector<PairedMetricResult> metrics;
  if (plan.bleu) {
    std::vector<std::vector<BleuStats>> stats;
    for (const auto* hyps : systems) stats.push_back(segment_bleu_stats(*hyps, inputs.refs, plan.bleu_options));
    metrics.push_back({"BLEU", paired_bootstrap_signature(bleu_signature(plan.bleu_options, num_refs), test),
                       paired_bootstrap_bleu(stats, plan.bleu_options, test)});
  }
  if (plan.chrf) {
    std::vector<std::vector<ChrfStats>> stats;
    for (const auto* hyps : systems) stats.push_back(segment_chrf_stats(*hyps, inputs.refs, plan.chrf_options));
    metrics.push_back({chrf_name(plan.chrf_options),
                       paired_bootstrap_signature(chrf_signature(plan.chrf_options, num_refs), test),
                       paired_bootstrap_chrf(stats, plan.chrf_options, test)});
  }
  if (options.json) {
    nlohmann::ordered_json report = paired_bootstrap_json(options.hyps, metrics, test);
    report["refs"] = options.refs;
    report["num_segments"] = inputs.hyps.size();
    print_json(report);
    return;
  }
  for (const auto& line : paired_bootstrap_lines(options.hyps, metrics, test, options.width)) std::cout << line << '\n';
}

}  // namespace tfm
