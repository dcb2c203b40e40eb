// `tfm eval`: score a translation with BLEU and chrF exactly as sacreBLEU 2.6.0 does. Option
// names are sacreBLEU's long options, so a sacreBLEU command line translates flag for flag.
// With --model and --src it first translates the source (as `tfm translate` does) and also
// reports the translation speed.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/command.h"
#include "app/decoding_options.h"
#include "app/model_loading.h"
#include "app/runtime_options.h"
#include "decode/search_options.h"
#include "metrics/bleu.h"
#include "metrics/chrf.h"
#include "metrics/paired_bootstrap.h"
#include "metrics/paired_bootstrap_report.h"
#include "metrics/score_report.h"
#include "metrics/signature.h"
#include "text/segment_reader.h"
#include "translation/translator.h"

namespace tfm {
namespace {

// Bootstrap resamples at most: sacreBLEU's default is 1000, and a million take ~15 s a 1000
// sentences here; past that a typo runs for hours without a word.
constexpr int64_t kMostResamples = 1000000;

void require_resamples(const char* flag, int64_t resamples) {
  if (resamples < 1 || resamples > kMostResamples) {
    throw std::invalid_argument(std::string(flag) + " " + std::to_string(resamples) + ": must be within 1 and " +
                                std::to_string(kMostResamples));
  }
}

struct EvalCommandOptions {
  std::vector<std::string> hyps;  // several only with --paired-bs
  std::vector<std::string> refs;
  std::vector<std::string> metrics = {"bleu"};
  std::string tokenize = "13a";
  bool lowercase = false;
  std::string smooth_method = "exp";
  double smooth_value = 0.0;
  bool has_smooth_value = false;
  bool sentence_level = false;
  int chrf_word_order = 0;
  bool chrf_lowercase = false;
  int width = 2;
  bool json = false;
  bool paired_bs = false;
  int64_t paired_bs_n = 1000;
  bool confidence = false;
  int64_t confidence_n = 1000;
  // Translate-and-score mode.
  std::vector<std::string> models;
  std::string src;
  std::string output;  // where to keep the translations (optional)
  DecodingOptions decoding;
  int64_t workers = 0;  // batches decoded side by side (0 = one per core)
  RuntimeOptions runtime;
};

/// What to compute, built and validated from the flags before any file is read.
struct EvalPlan {
  bool bleu = false;
  bool chrf = false;
  BleuOptions bleu_options;
  ChrfOptions chrf_options;
};

/// The segments to score: hyps[i] is scored against refs[r][i] for every reference file r.
struct EvalInputs {
  std::vector<std::string> hyps;
  std::vector<std::vector<std::string>> compared;  // --paired-bs: the --hyp files after the first
  std::vector<std::vector<std::string>> refs;
  // Translate-and-score mode only.
  double seconds = 0;
  int64_t target_tokens = 0;
};

EvalPlan make_plan(const EvalCommandOptions& options) {
  EvalPlan plan;
  for (const auto& metric : options.metrics) {
    if (metric == "bleu") {
      plan.bleu = true;
    } else if (metric == "chrf") {
      plan.chrf = true;
    } else {
      throw std::invalid_argument("--metrics " + metric + ": unknown metric (tfm computes bleu and chrf)");
    }
  }
  if (options.sentence_level && plan.bleu && plan.chrf) {
    throw std::invalid_argument("--sentence-level scores one metric at a time: give --metrics bleu or --metrics chrf");
  }
  if (options.hyps.empty() == options.models.empty()) {
    throw std::invalid_argument("give either --hyp (score a file) or --model with --src (translate, then score)");
  }
  if (options.paired_bs) {
    if (options.hyps.size() < 2)
      throw std::invalid_argument("--paired-bs compares --hyp files: give a baseline and at least one more");
    if (options.sentence_level) throw std::invalid_argument("--paired-bs tests corpus scores: drop --sentence-level");
    require_resamples("--paired-bs-n", options.paired_bs_n);
  } else if (options.hyps.size() > 1) {
    throw std::invalid_argument("several --hyp files: compare them with --paired-bs (the first is the baseline)");
  }
  if (options.confidence) {
    if (options.paired_bs)
      throw std::invalid_argument("--confidence with --paired-bs: the paired test gives each system's interval");
    if (options.sentence_level) throw std::invalid_argument("--confidence is for corpus scores: drop --sentence-level");
    require_resamples("--confidence-n", options.confidence_n);
  }
  if (!options.models.empty() && options.src.empty()) throw std::invalid_argument("--model needs --src");
  batch_workers(options.workers, options.decoding.translator.max_tokens);  // throws for a bad --workers
  int stdin_inputs = options.src == "-" ? 1 : 0;
  for (const auto& hyp : options.hyps) stdin_inputs += hyp == "-" ? 1 : 0;
  for (const auto& ref : options.refs) stdin_inputs += ref == "-" ? 1 : 0;
  if (stdin_inputs > 1) throw std::invalid_argument("only one of --hyp and --ref can read stdin ('-')");
  if (options.width < 0 || options.width > 17) {
    throw std::invalid_argument("--width " + std::to_string(options.width) + ": must be 0..17 decimals");
  }
  plan.bleu_options.tokenizer = parse_bleu_tokenizer(options.tokenize);
  plan.bleu_options.lowercase = options.lowercase;
  plan.bleu_options.smooth_method = parse_smooth_method(options.smooth_method);
  if (options.has_smooth_value) plan.bleu_options.smooth_value = options.smooth_value;
  plan.bleu_options.effective_order = options.sentence_level;  // as sacreBLEU's -sl does
  validate(plan.bleu_options);
  plan.chrf_options.word_order = options.chrf_word_order;
  plan.chrf_options.lowercase = options.chrf_lowercase;
  validate(plan.chrf_options);
  return plan;
}

/// Translates --src with --model (one model or an ensemble); keeps the time it took.
void translate_source(const EvalCommandOptions& options, EvalInputs& inputs) {
  const auto sources = read_segments(options.src);
  DecodingOptions decoding = options.decoding;
  decoding.translator.workers = batch_workers(options.workers, decoding.translator.max_tokens);
  Translator translator = open_translator(options.models, decoding, options.runtime);
  const auto start = std::chrono::steady_clock::now();
  size_t at_max = 0, first_at_max = 0;  // translations that may be cut short; the first's line
  for (const auto& translation : translator.translate(sources)) {
    inputs.hyps.push_back(translation.text());
    if (translation.at_max_length && at_max++ == 0) first_at_max = inputs.hyps.size();
  }
  if (at_max > 0) {
    const SearchOptions& search = decoding.translator.search;
    spdlog::warn(
        "{}: {} of {} translations have the most subwords the search allows (--max-len-a {:g} * source + "
        "--max-len-b {}) and may be cut short, the first of line {}",
        options.src, at_max, inputs.hyps.size(), search.max_len_a, search.max_len_b, first_at_max);
  }
  inputs.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  inputs.target_tokens = translator.target_tokens();
  if (!options.output.empty()) {
    std::ofstream out(options.output);
    for (const auto& hyp : inputs.hyps) out << hyp << '\n';
    if (!out.flush()) throw std::runtime_error(options.output + ": cannot write");  // a full disk shows at the flush
  }
}

EvalInputs read_inputs(const EvalCommandOptions& options) {
  EvalInputs inputs;
  const bool translate = !options.models.empty();
  const auto name = [](const std::string& path) { return path == "-" ? std::string("<stdin>") : path; };
  const std::string hyp_name = translate ? options.src : name(options.hyps[0]);
  if (translate) {
    translate_source(options, inputs);
  } else {
    inputs.hyps = read_segments(options.hyps[0]);
  }
  for (size_t s = 1; s < options.hyps.size(); ++s) {
    inputs.compared.push_back(read_segments(options.hyps[s]));
    check_segment_counts(hyp_name, inputs.hyps.size(), name(options.hyps[s]), inputs.compared.back().size());
  }
  for (const auto& path : options.refs) {
    inputs.refs.push_back(read_segments(path));
    check_segment_counts(hyp_name, inputs.hyps.size(), path == "-" ? "<stdin>" : path, inputs.refs.back().size());
  }
  if (inputs.hyps.empty()) throw std::runtime_error(hyp_name + ": no segments to score (the file is empty)");
  return inputs;
}

/// Translation speed, in translate-and-score mode.
nlohmann::ordered_json speed_json(const EvalInputs& inputs) {
  const double seconds = std::max(inputs.seconds, 1e-9);
  return {{"sentences", inputs.hyps.size()},
          {"seconds", inputs.seconds},
          {"sentences_per_second", inputs.hyps.size() / seconds},
          {"target_tokens_per_second", inputs.target_tokens / seconds}};
}

/// sacreBLEU's hint for tokenized output, which lowers BLEU: it warns from 100 such lines on.
void warn_if_tokenized(const std::vector<std::string>& hyps) {
  size_t tokenized = 0;
  for (const auto& hyp : hyps) tokenized += hyp.size() >= 2 && hyp.compare(hyp.size() - 2, 2, " .") == 0 ? 1 : 0;
  if (tokenized >= 100) {
    spdlog::warn(
        "{} hypothesis lines end in ' .': BLEU expects detokenized text (detokenize it, or ignore this "
        "if the text really is detokenized)",
        tokenized);
  }
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

/// One line (or JSON object) per metric, each computed over the whole corpus.
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

/// One score per segment, for the single metric asked for (sacreBLEU's -sl).
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

/// --paired-bs: every --hyp file against the first, on the same resamples, as sacreBLEU's test.
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

void run_eval(const EvalCommandOptions& options) {
  const EvalPlan plan = make_plan(options);
  const EvalInputs inputs = read_inputs(options);
  if (plan.bleu) warn_if_tokenized(inputs.hyps);
  if (options.paired_bs) {
    print_paired_test(options, plan, inputs);
  } else if (options.sentence_level) {
    print_sentence_scores(options, plan, inputs);
  } else {
    print_corpus_scores(options, plan, inputs);
  }
  std::cout.flush();
}

}  // namespace

void add_eval_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<EvalCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "eval", "Score translations with BLEU and chrF exactly as sacreBLEU 2.6.0 does (same option names)");
  command->add_option("--hyp", options->hyps,
                      "System output, one segment per line (- for stdin; .gz, .sgm, .xml); with --paired-bs, "
                      "a baseline and the systems to compare with it");
  command->add_option("--ref", options->refs, "Reference file(s); line i of each translates line i of the source")
      ->required();
  command->add_option("--metrics", options->metrics, "bleu and/or chrf")->delimiter(',')->capture_default_str();
  command->add_option("--tokenize", options->tokenize, "BLEU tokenizer: 13a, intl, char or none")
      ->capture_default_str();
  command->add_flag("--lowercase", options->lowercase, "Case-insensitive BLEU");
  command->add_option("--smooth-method", options->smooth_method, "BLEU smoothing: exp, floor, add-k or none")
      ->capture_default_str();
  CLI::Option* smooth_value =
      command->add_option("--smooth-value", options->smooth_value, "For floor (default 0.1) and add-k (default 1)");
  command->add_flag("--sentence-level", options->sentence_level,
                    "One score per segment, BLEU with effective order (one metric only)");
  command->add_option("--chrf-word-order", options->chrf_word_order, "Word n-gram order of chrF (2 gives chrF++)")
      ->capture_default_str();
  command->add_flag("--chrf-lowercase", options->chrf_lowercase, "Case-insensitive chrF");
  command->add_option("--width", options->width, "Decimals of printed scores (JSON has full precision)")
      ->capture_default_str();
  command->add_flag("--json", options->json, "Print one JSON object instead of text lines");
  command->add_flag("--paired-bs", options->paired_bs,
                    "Paired bootstrap resampling, as sacreBLEU's: each --hyp file after the first against the "
                    "first, with the 95% interval and p-value of each score (seed: SACREBLEU_SEED, default 12345)");
  command->add_option("--paired-bs-n", options->paired_bs_n, "Resamples of the test set for --paired-bs")
      ->capture_default_str();
  command->add_flag("--confidence", options->confidence,
                    "Bootstrap mean and 95% interval of each corpus score, as sacreBLEU's (seed: SACREBLEU_SEED)");
  command->add_option("--confidence-n", options->confidence_n, "Resamples of the test set for --confidence")
      ->capture_default_str();
  const std::string group = "Translate and score (instead of --hyp)";
  command->add_option("--model,-m", options->models, "Model file(s) to translate --src with (several = ensemble)")
      ->group(group);
  command->add_option("--src", options->src, "Source segments to translate (.gz, .sgm, .xml)")->group(group);
  command->add_option("--output,-o", options->output, "Also write the translations here")->group(group);
  add_decoding_options(*command, options->decoding, group);
  add_batch_workers_option(*command, options->workers, group);
  add_runtime_options(*command, options->runtime);
  command->callback([options, smooth_value, &action] {
    options->has_smooth_value = smooth_value->count() > 0;
    action = [options] { run_eval(*options); };
  });
}

}  // namespace tfm
