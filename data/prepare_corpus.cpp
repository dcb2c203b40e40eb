#include "data/prepare_corpus.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "data/prepared_dir.h"
#include "data/progress_meter.h"
#include "data/split_mix.h"
#include "runtime/durable_file.h"
#include "text/option_names.h"

namespace fs = std::filesystem;

namespace tfm {
namespace {

/// Files written for the tokenizer trainer, removed however training ends.
struct TemporaryFiles {
  std::vector<std::string> paths;
  ~TemporaryFiles() {
    std::error_code ignored;
    for (const auto& path : paths) fs::remove(path, ignored);
  }
};

/// Algorithm R (Vitter, 1985): a uniform sample of `capacity` pairs from a stream of unknown
/// length, in one pass. A corpus no larger than the sample is kept whole, in order.
class PairReservoir {
 public:
  PairReservoir(size_t capacity, uint64_t seed) : capacity_(capacity), random_(seed) {}
  void offer(TextPair& pair) {
    ++seen_;
    if (capacity_ == 0 || pairs_.size() < capacity_) {
      pairs_.push_back(std::move(pair));
      return;
    }
    const uint64_t slot = random_.next() % seen_;
    if (slot < capacity_) pairs_[slot] = std::move(pair);
  }
  const std::vector<TextPair>& pairs() const { return pairs_; }

 private:
  size_t capacity_;    // 0: keep everything
  SplitMix64 random_;  // the same sample with every standard library
  uint64_t seen_ = 0;
  std::vector<TextPair> pairs_;
};

/// The tokenizer's training text: a uniform sample of the training pairs (the reader training
/// uses turns TSV lines and SGML sets into plain sentences, and finds bad UTF-8 or misaligned
/// files here, naming file and line, before minutes of tokenizer training), one sentence a line
/// in two files in `dir` (recorded in `temporary`).
std::vector<std::string> tokenizer_inputs(const CorpusFiles& files, const TokenizerTrainOptions& trainer,
                                          const fs::path& dir, TemporaryFiles& temporary) {
  fs::create_directories(dir);
  PairReservoir reservoir(static_cast<size_t>((trainer.max_sentences + 1) / 2), trainer.seed);
  ParallelTextReader reader = open_corpus(files);
  ProgressMeter progress(reader.describe() + ": sampling for the tokenizer");
  std::vector<TextPair> pairs;
  while (reader.read(pairs, 65536) > 0) {
    for (auto& pair : pairs) reservoir.offer(pair);
    progress.update(reader.fraction_read(), std::to_string(reader.pairs_read()) + " pairs");
  }
  temporary.paths = {(dir / "spm-input.src.tmp").string(), (dir / "spm-input.tgt.tmp").string()};
  std::ofstream source(temporary.paths[0], std::ios::binary), target(temporary.paths[1], std::ios::binary);
  int64_t non_empty = 0;
  for (const auto& pair : reservoir.pairs()) {
    source << pair.source << '\n';
    target << pair.target << '\n';
    non_empty += !pair.source.empty() || !pair.target.empty();
  }
  if (!source.flush() || !target.flush()) throw std::runtime_error(dir.string() + ": cannot write tokenizer input");
  if (non_empty == 0) {
    throw std::runtime_error((files.tsv.empty() ? files.source : files.tsv) +
                             ": no sentences to train a tokenizer on (the corpus is empty)");
  }
  spdlog::info("tokenizer sample: {} of {} pairs", reservoir.pairs().size(), reader.pairs_read());
  return temporary.paths;
}

Tokenizer obtain_tokenizer(const PrepareCorpusOptions& options, const fs::path& work_dir) {
  if (!options.spm.empty()) return Tokenizer::from_file(options.spm);
  TokenizerTrainOptions trainer = options.tokenizer;
  TemporaryFiles temporary;
  trainer.inputs = tokenizer_inputs(options.train, trainer, work_dir, temporary);
  // SentencePiece trains in one call that reports no progress; on the default sample it takes
  // seconds (BENCHMARKS.md, "Data at scale"), so the log says when it starts and ends.
  spdlog::info("training a joint {}-piece {} SentencePiece model", trainer.vocab_size, trainer.model_type);
  const auto start = std::chrono::steady_clock::now();
  Tokenizer tokenizer = Tokenizer::from_serialized(train_tokenizer(trainer), "trained model");
  spdlog::info("tokenizer trained in {:.1f} s",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return tokenizer;
}

/// prepare_split over `files` into `keep`, its counts logged under `name`; std::runtime_error when
/// cleaning leaves nothing.
CleaningReport prepare_files(const CorpusFiles& files, const std::string& name, const Tokenizer& tokenizer,
                             const PrepareOptions& options, const PairSink& keep) {
  ParallelTextReader reader = open_corpus(files);
  const CleaningReport report = prepare_split(reader, tokenizer, options, keep);
  log_report(name, report, options.cleaning);
  if (report.kept == 0) {
    throw std::runtime_error(reader.describe() + ": no pair left after cleaning (check the files and " +
                             option_name("max_len") + ")");
  }
  return report;
}

/// Streams one split into shard files of `dir`.
CleaningReport write_split(const CorpusFiles& files, const std::string& name, const Tokenizer& tokenizer,
                           const PrepareOptions& options, const fs::path& dir, uint64_t shard_bytes,
                           std::vector<std::string>* written) {
  SplitWriter writer(dir.string(), name, tokenizer.vocab_size(), shard_bytes);
  const CleaningReport report =
      prepare_files(files, name, tokenizer, options,
                    [&writer](const auto& source, const auto& target) { writer.add(source, target); });
  const std::vector<std::string> files_written = writer.commit();
  if (written != nullptr) *written = files_written;
  return report;
}

}  // namespace

void validate(const CorpusFiles& files, const std::string& name, bool required) {
  const bool aligned = !files.source.empty() || !files.target.empty();
  if (aligned && !files.tsv.empty()) {
    throw std::invalid_argument("give either --" + name + "-src/--" + name + "-tgt or --" + name + "-tsv, not both");
  }
  if (aligned && (files.source.empty() || files.target.empty())) {
    throw std::invalid_argument("--" + name + "-src and --" + name + "-tgt go together");
  }
  if (required && !files.given()) {
    throw std::invalid_argument("give the " + name + " corpus: --" + name + "-src F --" + name + "-tgt F, or --" +
                                name + "-tsv F");
  }
}

ParallelTextReader open_corpus(const CorpusFiles& files) {
  return files.tsv.empty() ? ParallelTextReader::open_files(files.source, files.target)
                           : ParallelTextReader::open_tsv(files.tsv);
}

PreparedSplit prepare_corpus_split(const CorpusFiles& files, const std::string& name, const Tokenizer& tokenizer,
                                   const PrepareOptions& options) {
  PreparedSplit split;
  split.report = prepare_files(files, name, tokenizer, options,
                               [&split](const auto& source, const auto& target) { split.data.append(source, target); });
  return split;
}

void validate(const PrepareCorpusOptions& options) {
  validate(options.train, "train", true);
  validate(options.valid, "valid", false);
  if (options.spm.empty()) {
    TokenizerTrainOptions trainer = options.tokenizer;
    trainer.inputs = {"(the training corpus)"};
    validate(trainer);
  }
  validate(options.prepare.cleaning);
  if (options.shard_bytes == 0) throw std::invalid_argument(option_name("shard_size") + " must be positive");
}

PreparedCorpus prepare_corpus(const PrepareCorpusOptions& options, const fs::path& out_dir,
                              const std::optional<Tokenizer>& given) {
  validate(options);
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error) throw std::runtime_error(out_dir.string() + ": cannot create directory (" + error.message() + ")");
  const auto start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point from) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  };
  PreparedCorpus corpus{given ? *given : obtain_tokenizer(options, out_dir), {}, {}, {}, 0, 0};
  corpus.tokenizer_seconds = given ? 0.0 : since(start);
  const auto encode_start = std::chrono::steady_clock::now();
  write_file_durably((out_dir / kPreparedModelFile).string(), corpus.tokenizer.serialized());
  corpus.train = write_split(options.train, "train", corpus.tokenizer, options.prepare, out_dir, options.shard_bytes,
                             &corpus.train_files);
  if (options.valid.given()) {
    corpus.valid = write_split(options.valid, "valid", corpus.tokenizer, options.prepare, out_dir, UINT64_MAX, nullptr);
  } else {
    remove_split_files(out_dir.string(), "valid");
  }
  corpus.encode_seconds = since(encode_start);
  return corpus;
}

}  // namespace tfm
