// `tfm prepare`: tokenize a parallel corpus once (like fairseq-preprocess) into a directory that
// `tfm train` loads in seconds: the SentencePiece model plus binary train/valid splits.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "app/command.h"
#include "data/batching.h"
#include "data/prepare_dataset.h"
#include "data/prepared_dir.h"
#include "metrics/segment_reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace tfm {
namespace {

/// One split's input: two aligned files, or one TSV file (then `target` is empty).
struct SplitInput {
  std::string source, target, tsv;
  bool given() const { return !source.empty() || !target.empty() || !tsv.empty(); }
};

struct PrepareCommandOptions {
  SplitInput train, valid;
  std::string spm;
  TokenizerTrainOptions trainer;
  std::string out;
  PrepareOptions prepare;
  int64_t report_max_tokens = 4096;
};

void validate_split(const SplitInput& input, const std::string& name, bool required) {
  const bool files = !input.source.empty() || !input.target.empty();
  if (files && !input.tsv.empty()) {
    throw std::invalid_argument("give either --" + name + "-src/--" + name + "-tgt or --" + name + "-tsv, not both");
  }
  if (files && (input.source.empty() || input.target.empty())) {
    throw std::invalid_argument("--" + name + "-src and --" + name + "-tgt go together");
  }
  if (required && !input.given()) {
    throw std::invalid_argument("give the training corpus: --train-src F --train-tgt F, or --train-tsv F");
  }
}

void validate(const PrepareCommandOptions& options) {
  validate_split(options.train, "train", true);
  validate_split(options.valid, "valid", false);
  if (options.spm.empty()) {
    TokenizerTrainOptions trainer = options.trainer;
    trainer.inputs = {"(the training corpus)"};
    validate(trainer);
  }
  validate(options.prepare.cleaning);
  if (options.prepare.cleaning.max_len + 1 > options.report_max_tokens) {
    throw std::invalid_argument("--max-tokens " + std::to_string(options.report_max_tokens) + " cannot hold a pair of " +
                                "--max-len " + std::to_string(options.prepare.cleaning.max_len) +
                                " subwords plus eos (raise --max-tokens or lower --max-len)");
  }
}

ParallelTextReader open_split(const SplitInput& input) {
  return input.tsv.empty() ? ParallelTextReader::open_files(input.source, input.target)
                           : ParallelTextReader::open_tsv(input.tsv);
}

/// Files written for the tokenizer trainer, removed however training ends.
struct TemporaryFiles {
  std::vector<std::string> paths;
  ~TemporaryFiles() {
    std::error_code ignored;
    for (const auto& path : paths) std::filesystem::remove(path, ignored);
  }
};

/// The training corpus as one-sentence-a-line files for SentencePiece: the files themselves when
/// they are plain text, else each side written out to `dir` (recorded in `temporary`).
std::vector<std::string> tokenizer_inputs(const SplitInput& input, const std::filesystem::path& dir,
                                          TemporaryFiles& temporary) {
  if (input.tsv.empty() && !is_sgml_path(input.source) && !is_sgml_path(input.target)) {
    return {input.source, input.target};
  }
  temporary.paths = {(dir / "spm-input.src.tmp").string(), (dir / "spm-input.tgt.tmp").string()};
  const auto& paths = temporary.paths;
  std::ofstream source(paths[0], std::ios::binary), target(paths[1], std::ios::binary);
  ParallelTextReader reader = open_split(input);
  std::vector<TextPair> pairs;
  while (reader.read(pairs, 65536) > 0) {
    for (const auto& pair : pairs) {
      source << pair.source << '\n';
      target << pair.target << '\n';
    }
  }
  if (!source.flush() || !target.flush()) throw std::runtime_error(dir.string() + ": cannot write tokenizer input");
  return paths;
}

Tokenizer load_or_train_tokenizer(const PrepareCommandOptions& options) {
  if (!options.spm.empty()) return Tokenizer::from_file(options.spm);
  TokenizerTrainOptions trainer = options.trainer;
  TemporaryFiles temporary;
  trainer.inputs = tokenizer_inputs(options.train, options.out, temporary);
  spdlog::info("training a joint {}-piece {} SentencePiece model", trainer.vocab_size, trainer.model_type);
  return Tokenizer::from_serialized(train_tokenizer(trainer), "trained model");
}

PreparedSplit prepare_logged(const SplitInput& input, const std::string& name, const Tokenizer& tokenizer,
                             const PrepareOptions& options) {
  ParallelTextReader reader = open_split(input);
  PreparedSplit split = prepare_split(reader, tokenizer, options);
  log_report(name, split.report, options.cleaning);
  if (split.data.size() == 0) {
    throw std::runtime_error(reader.describe() + ": no pair left after cleaning (check the files and --max-len)");
  }
  return split;
}

void run_prepare(PrepareCommandOptions options) {
  validate(options);
  options.prepare.threads = torch::get_num_threads();  // --threads, all cores by default
  std::filesystem::create_directories(options.out);
  const Tokenizer tokenizer = load_or_train_tokenizer(options);
  const auto start = std::chrono::steady_clock::now();  // text -> dataset, without tokenizer training
  const PreparedSplit train = prepare_logged(options.train, "train", tokenizer, options.prepare);
  std::optional<PreparedSplit> valid;
  if (options.valid.given()) valid = prepare_logged(options.valid, "valid", tokenizer, options.prepare);
  save_prepared(options.out, tokenizer, train.data, valid ? &valid->data : nullptr);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  BatchingOptions batching;
  batching.max_tokens = options.report_max_tokens;
  const double efficiency = padding_efficiency(train.data, make_batches(train.data, batching, 1));
  spdlog::info("train: {} pairs, {} + {} subwords; padding efficiency {:.3f} in batches of {} tokens",
               train.data.size(), train.data.source.total_tokens(), train.data.target.total_tokens(), efficiency,
               batching.max_tokens);
  const int64_t read = train.report.read + (valid ? valid->report.read : 0);
  spdlog::info("wrote {} ({}, {}{}): {} sentences read, tokenized and written in {:.2f} s ({:.0f} sentences/s)",
               options.out, kPreparedModelFile, kPreparedTrainFile,
               valid ? std::string(", ") + kPreparedValidFile : "", 2 * read, seconds,
               2.0 * static_cast<double>(read) / std::max(seconds, 1e-9));
}

void add_split_options(CLI::App& command, SplitInput& input, const std::string& name, const std::string& what) {
  command.add_option("--" + name + "-src", input.source, what + " source side, one sentence a line (.gz, .sgm ok)");
  command.add_option("--" + name + "-tgt", input.target, what + " target side, aligned with --" + name + "-src");
  command.add_option("--" + name + "-tsv", input.tsv, what + " as one source<TAB>target file (instead of -src/-tgt)");
}

}  // namespace

void add_prepare_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<PrepareCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "prepare", "Tokenize a parallel corpus once into a binary dataset directory for `tfm train`");
  add_split_options(*command, options->train, "train", "Training corpus:");
  add_split_options(*command, options->valid, "valid", "Validation corpus (optional):");
  command->add_option("--out,-o", options->out, "Directory to write (spm.model, train.bin, valid.bin)")->required();
  auto* spm = command->add_option("--spm", options->spm, "Existing SentencePiece model (from `tfm tokenizer train`)");
  command->add_option("--vocab-size", options->trainer.vocab_size,
                      "Without --spm: train a joint model of this size on the training corpus")
      ->capture_default_str()
      ->excludes(spm);
  command->add_option("--model-type", options->trainer.model_type, "Without --spm: unigram or bpe")
      ->capture_default_str()
      ->excludes(spm);
  command->add_option("--max-len", options->prepare.cleaning.max_len,
                      "Drop pairs with a side longer than this many subwords")
      ->capture_default_str();
  command->add_option("--max-len-ratio", options->prepare.cleaning.max_len_ratio,
                      "Drop pairs whose longer side has more than this many times the shorter's subwords (0 = off)")
      ->capture_default_str();
  command->add_option("--max-tokens", options->report_max_tokens,
                      "Batch size in tokens for the padding-efficiency report (training picks its own)")
      ->capture_default_str();
  command->callback([options, &action] { action = [options] { run_prepare(*options); }; });
}

}  // namespace tfm
