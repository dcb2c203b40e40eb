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
#include "data/prepare_corpus.h"
#include "data/prepared_dir.h"

namespace tfm {
namespace {

struct PrepareCommandOptions {
  PrepareCorpusOptions corpus;
  std::string out;
  int64_t report_max_tokens = 4096;
};

void validate(const PrepareCommandOptions& options) {
  validate(options.corpus);
  if (options.corpus.prepare.cleaning.max_len + 1 > options.report_max_tokens) {
    throw std::invalid_argument("--max-tokens " + std::to_string(options.report_max_tokens) +
                                " cannot hold a pair of " + "--max-len " +
                                std::to_string(options.corpus.prepare.cleaning.max_len) +
                                " subwords plus eos (raise --max-tokens or lower --max-len)");
  }
}

void run_prepare(PrepareCommandOptions options) {
  validate(options);
  options.corpus.prepare.threads = torch::get_num_threads();  // --threads, all cores by default
  std::filesystem::create_directories(options.out);
  const auto start = std::chrono::steady_clock::now();
  const PreparedCorpus corpus = prepare_corpus(options.corpus, options.out);
  const auto& train = corpus.train;
  const auto& valid = corpus.valid;
  save_prepared(options.out, corpus.tokenizer, train.data, valid ? &valid->data : nullptr);
  // text -> dataset, without tokenizer training
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - corpus.tokenizer_seconds;

  BatchingOptions batching;
  batching.max_tokens = options.report_max_tokens;
  const double efficiency = padding_efficiency(train.data, make_batches(train.data, batching, 1));
  spdlog::info("train: {} pairs, {} + {} subwords; padding efficiency {:.3f} in batches of {} tokens",
               train.data.size(), train.data.source.total_tokens(), train.data.target.total_tokens(), efficiency,
               batching.max_tokens);
  const int64_t read = train.report.read + (valid ? valid->report.read : 0);
  spdlog::info("wrote {} ({}, {}{}): {} sentences read, tokenized and written in {:.2f} s ({:.0f} sentences/s)",
               options.out, kPreparedModelFile, kPreparedTrainFile, valid ? std::string(", ") + kPreparedValidFile : "",
               2 * read, seconds, 2.0 * static_cast<double>(read) / std::max(seconds, 1e-9));
}

void add_split_options(CLI::App& command, CorpusFiles& input, const std::string& name, const std::string& what) {
  command.add_option("--" + name + "-src", input.source, what + " source side, one sentence a line (.gz, .sgm ok)");
  command.add_option("--" + name + "-tgt", input.target, what + " target side, aligned with --" + name + "-src");
  command.add_option("--" + name + "-tsv", input.tsv, what + " as one source<TAB>target file (instead of -src/-tgt)");
}

}  // namespace

void add_prepare_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<PrepareCommandOptions>();
  CLI::App* command =
      app.add_subcommand("prepare", "Tokenize a parallel corpus once into a binary dataset directory for `tfm train`");
  auto& corpus = options->corpus;
  add_split_options(*command, corpus.train, "train", "Training corpus:");
  add_split_options(*command, corpus.valid, "valid", "Validation corpus (optional):");
  command->add_option("--out,-o", options->out, "Directory to write (spm.model, train.bin, valid.bin)")->required();
  auto* spm = command->add_option("--spm", corpus.spm, "Existing SentencePiece model (from `tfm tokenizer train`)");
  command
      ->add_option("--vocab-size", corpus.tokenizer.vocab_size,
                   "Without --spm: train a joint model of this size on the training corpus")
      ->capture_default_str()
      ->excludes(spm);
  command->add_option("--model-type", corpus.tokenizer.model_type, "Without --spm: unigram or bpe")
      ->capture_default_str()
      ->excludes(spm);
  command
      ->add_option("--max-len", corpus.prepare.cleaning.max_len,
                   "Drop pairs with a side longer than this many subwords")
      ->capture_default_str();
  command
      ->add_option("--max-len-ratio", corpus.prepare.cleaning.max_len_ratio,
                   "Drop pairs whose longer side has more than this many times the shorter's subwords (0 = off)")
      ->capture_default_str();
  command
      ->add_option("--max-tokens", options->report_max_tokens,
                   "Batch size in tokens for the padding-efficiency report (training picks its own)")
      ->capture_default_str();
  command->callback([options, &action] { action = [options] { run_prepare(*options); }; });
}

}  // namespace tfm
