// `tfm eval`: score a translation with BLEU and chrF exactly as sacreBLEU 2.6.0 does. Option
// names are sacreBLEU's long options, so a sacreBLEU command line translates flag for flag.
// With --model and --src it first translates the source (as `tfm translate` does) and also
// reports the translation speed.
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/command.h"
#include "app/decoding_options.h"
#include "app/eval_inputs.h"
#include "app/eval_report.h"
#include "app/model_loading.h"
#include "app/runtime_options.h"
#include "decode/search_options.h"
#include "metrics/bleu.h"
#include "metrics/chrf.h"
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
