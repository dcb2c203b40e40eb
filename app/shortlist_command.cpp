// `tfm shortlist`: a lexical shortlist from a parallel corpus, stored in a copy of the model file,
// for `tfm translate --shortlist`.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "app/command.h"
#include "data/parallel_encode.h"
#include "data/prepare_corpus.h"
#include "model/model_file.h"
#include "model/shortlist.h"
#include "model/shortlist_calibration.h"
#include "model/shortlist_coverage.h"
#include "tokenizer/tokenizer.h"

namespace tfm {
namespace {

struct ShortlistCommandOptions {
  std::string model;
  CorpusFiles train;
  CorpusFiles valid;  // held-out pairs whose coverage is reported
  std::string output;
  ShortlistOptions shortlist;
  int64_t max_pairs = 0;             // 0 = the whole corpus
  int64_t calibration_pairs = 1000;  // 0 = no correction
};

/// Reads up to `limit` pairs (0: all) a chunk at a time, encodes each chunk on all cores and hands
/// every pair's ids to `use`. -> the pairs read.
template <typename Use>
int64_t for_each_encoded_pair(ParallelTextReader& reader, const Tokenizer& tokenizer, int64_t limit, Use use) {
  std::vector<TextPair> pairs;
  std::vector<EncodedPair> encoded;
  constexpr int64_t kChunk = 100000;
  int64_t done = 0;
  while (limit == 0 || done < limit) {
    const int64_t want = limit == 0 ? kChunk : std::min(kChunk, limit - done);
    if (reader.read(pairs, static_cast<size_t>(want)) == 0) break;
    encode_pairs(tokenizer, pairs, /*threads=*/0, encoded);
    for (const auto& pair : encoded) use(pair);
    done += static_cast<int64_t>(encoded.size());
  }
  return done;
}

/// Logs the share of the held-out targets' tokens that their sentences' candidates hold.
void report_coverage(const Shortlist& shortlist, const Tokenizer& tokenizer, const CorpusFiles& files) {
  ParallelTextReader reader = open_corpus(files);
  ShortlistCoverage coverage;
  for_each_encoded_pair(reader, tokenizer, /*limit=*/0,
                        [&](const EncodedPair& pair) { coverage.add(shortlist, pair.source, pair.target); });
  spdlog::info(
      "coverage of {}: {:.2f}% of {} target subwords are among their sentence's candidates; {:.0f} "
      "candidates per sentence on average, {} at most, of {}",
      reader.describe(), 100.0 * coverage.covered_share(), coverage.target_tokens, coverage.mean_candidates(),
      coverage.most_candidates, shortlist.vocab_size());
}

/// Measures the shortlist's normalizer against the whole vocabulary's on the first `limit` pairs of
/// `files` (model/shortlist_calibration.h) and stores the correction in it.
void calibrate(LoadedModel& loaded, const Tokenizer& tokenizer, const CorpusFiles& files, int64_t limit) {
  ParallelTextReader reader = open_corpus(files);
  std::vector<std::vector<int64_t>> sources, targets;
  const int64_t longest = loaded.config.positions == PositionEncoding::kLearned ? loaded.config.max_positions - 1
                                                                                : std::numeric_limits<int64_t>::max();
  for_each_encoded_pair(reader, tokenizer, limit, [&](const EncodedPair& pair) {
    // What the model cannot have been trained on tells nothing about its steps.
    const auto length = static_cast<int64_t>(std::max(pair.source.size(), pair.target.size()));
    if (pair.source.empty() || pair.target.empty() || length > longest) return;
    sources.push_back(pair.source);
    targets.push_back(pair.target);
  });
  ShortlistCalibrator calibrator(loaded.model, loaded.shortlist);
  calibrator.add_pairs(sources, targets);
  const auto calibration = calibrator.solve();
  loaded.shortlist.set_rest_correction(calibration.correction);
  spdlog::info(
      "calibration on {} steps of {}: the estimated normalizer was off by {:+.4f} nats a step on average "
      "({:.4f} absolute); corrected by {:+.4f}, off by {:+.4f} ({:.4f} absolute)",
      calibration.steps, reader.describe(), calibration.mean_before, calibration.mean_abs_before,
      calibration.correction, calibration.mean_after, calibration.mean_abs_after);
}

void run_shortlist(const ShortlistCommandOptions& options) {
  validate(options.train, "train", /*required=*/true);
  validate(options.valid, "valid", /*required=*/false);
  validate(options.shortlist);
  if (options.max_pairs < 0) throw std::invalid_argument("--max-pairs must be >= 0");
  if (options.calibration_pairs < 0) throw std::invalid_argument("--calibration-pairs must be >= 0");
  auto loaded = load_float_model_file(options.model, torch::kCPU, "a shortlist (its calibration)");
  const auto tokenizer = Tokenizer::from_serialized(loaded.tokenizer_proto, options.model);
  ShortlistBuilder builder(loaded.config.vocab_size);
  ParallelTextReader reader = open_corpus(options.train);
  for_each_encoded_pair(reader, tokenizer, options.max_pairs, [&](const EncodedPair& pair) {
    builder.add(pair.source, pair.target);
    if (builder.pairs() % 100000 == 0) spdlog::info("{} pairs counted", builder.pairs());
  });
  if (builder.pairs() == 0) throw std::runtime_error(reader.describe() + ": no sentence pairs");
  loaded.shortlist = builder.build(options.shortlist);
  if (options.valid.given()) report_coverage(loaded.shortlist, tokenizer, options.valid);
  if (options.calibration_pairs > 0) {
    calibrate(loaded, tokenizer, options.valid.given() ? options.valid : options.train, options.calibration_pairs);
  }
  save_model_file(options.output, loaded.model, loaded.tokenizer_proto, loaded.shortlist);
  spdlog::info(
      "shortlist from {} pairs of {}: {} frequent subwords + up to {} per source subword ({} in all); wrote {}",
      builder.pairs(), reader.describe(), loaded.shortlist.frequent().size(), options.shortlist.per_source,
      loaded.shortlist.entries(), options.output);
}

}  // namespace

void add_shortlist_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ShortlistCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "shortlist",
      "Build a lexical shortlist (the target subwords each source subword translates to) from a parallel corpus "
      "and write the model with it, for `tfm translate --shortlist`");
  cmd->add_option("--model,-m", options->model, "Model file or checkpoint")->required();
  cmd->add_option("--train-src", options->train.source, "Source side of the corpus (plain or .gz)");
  cmd->add_option("--train-tgt", options->train.target, "Target side, aligned line by line");
  cmd->add_option("--train-tsv", options->train.tsv, "Or one file of source<TAB>target lines");
  cmd->add_option("--out,-o", options->output, "Model file to write (the model and its shortlist)")->required();
  cmd->add_option("--shortlist-per-source", options->shortlist.per_source,
                  "Candidates kept for each source subword (the most likely translations)");
  cmd->add_option("--shortlist-frequent", options->shortlist.frequent,
                  "Most frequent target subwords, in every sentence's candidates");
  cmd->add_option("--shortlist-iterations", options->shortlist.iterations,
                  "EM iterations of IBM Model 1 that rank each source subword's targets (0: rank by co-occurrence)");
  cmd->add_option("--max-pairs", options->max_pairs, "Count only the first N pairs (0 = all)");
  cmd->add_option("--valid-src", options->valid.source,
                  "Held-out source lines: report the share of their targets' subwords the shortlist covers");
  cmd->add_option("--valid-tgt", options->valid.target,
                  "Their targets (references, or the model's own translations without the shortlist)");
  cmd->add_option("--valid-tsv", options->valid.tsv, "Or one file of source<TAB>target lines");
  cmd->add_option("--calibration-pairs", options->calibration_pairs,
                  "Pairs (of --valid-*, else of the corpus) on which to measure and correct the shortlist's "
                  "estimate of the probability it leaves out (0: no correction)");
  cmd->callback([options, &action] { action = [options] { run_shortlist(*options); }; });
}

}  // namespace tfm
