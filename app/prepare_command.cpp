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
#include "runtime/directory_lock.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

struct PrepareCommandOptions {
  PrepareCorpusOptions corpus;
  std::string out;
  int64_t report_max_tokens = 4096;
};

void validate(const PrepareCommandOptions& options) {
  // Checked here, where it has this command's name: the tokenizer library calls it max_sentences,
  // which on the command line is also training's batch limit.
  if (options.corpus.tokenizer.max_sentences < 0) {
    throw std::invalid_argument("--tokenizer-sample must be >= 0 (0: the whole corpus)");
  }
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
  std::error_code error;
  std::filesystem::create_directories(options.out, error);
  if (error) throw std::runtime_error(options.out + ": cannot create directory (" + error.message() + ")");
  // Two preparations into one directory would mix one's tokenizer with the other's shards.
  const DirectoryLock lock(options.out, "--out", "tfm prepare");
  const PreparedCorpus corpus = prepare_corpus(options.corpus, options.out);

  // The report reads only the shards' headers and lengths, a few bytes a pair.
  BatchingOptions batching;
  batching.max_tokens = options.report_max_tokens;
  BatchingStats stats;
  int64_t source_tokens = 0, target_tokens = 0;
  const PreparedData written = load_prepared(options.out);
  for (const Shard& shard : written.train) {
    const BatchingStats part = batching_stats(shard, batching);
    stats.tokens += part.tokens;
    stats.padded_tokens += part.padded_tokens;
    source_tokens += shard.source_tokens();
    target_tokens += shard.target_tokens();
    shard.release_pages();
  }
  spdlog::info("train: {} pairs, {} + {} subwords in {} shard{}; padding efficiency {:.3f} in batches of {} tokens",
               total_pairs(written.train), source_tokens, target_tokens, written.train.size(),
               written.train.size() == 1 ? "" : "s", stats.padding_efficiency(), batching.max_tokens);
  const int64_t read = corpus.train.read + corpus.valid.read;
  spdlog::info("wrote {} ({}, {}{}): {} sentences read, tokenized and written in {:.2f} s ({:.0f} sentences/s)",
               options.out, kPreparedModelFile,
               written.train.size() == 1
                   ? std::string(kPreparedTrainFile)
                   : "train.000.bin .. " + fs::path(written.train.back().name()).filename().string(),
               written.valid ? std::string(", ") + kPreparedValidFile : "", 2 * read, corpus.encode_seconds,
               2.0 * static_cast<double>(read) / std::max(corpus.encode_seconds, 1e-9));
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
  command
      ->add_option("--shard-size", corpus.shard_bytes,
                   "Split the training data into shard files of at most this size (bytes; k/M/G suffixes: 512M)")
      ->transform(CLI::AsSizeValue(false))
      ->default_str("512M");
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
      ->add_option("--tokenizer-sample", corpus.tokenizer.max_sentences,
                   "Without --spm: train it on this many sentences drawn from the whole corpus (0 = all)")
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
