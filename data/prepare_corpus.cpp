#include "data/prepare_corpus.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <vector>

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

/// The training text as one-sentence-a-line files for SentencePiece, each side written out to `dir`
/// (recorded in `temporary`) through the same reader that training uses: TSV lines and SGML sets
/// become plain sentences, and bad UTF-8 or misaligned files fail here, naming file and line,
/// before minutes of tokenizer training.
std::vector<std::string> tokenizer_inputs(const CorpusFiles& files, const fs::path& dir, TemporaryFiles& temporary) {
  fs::create_directories(dir);
  temporary.paths = {(dir / "spm-input.src.tmp").string(), (dir / "spm-input.tgt.tmp").string()};
  std::ofstream source(temporary.paths[0], std::ios::binary), target(temporary.paths[1], std::ios::binary);
  ParallelTextReader reader = open_corpus(files);
  std::vector<TextPair> pairs;
  int64_t non_empty = 0;
  while (reader.read(pairs, 65536) > 0) {
    for (const auto& pair : pairs) {
      source << pair.source << '\n';
      target << pair.target << '\n';
      non_empty += !pair.source.empty() || !pair.target.empty();
    }
  }
  if (!source.flush() || !target.flush()) throw std::runtime_error(dir.string() + ": cannot write tokenizer input");
  if (non_empty == 0) {
    throw std::runtime_error((files.tsv.empty() ? files.source : files.tsv) +
                             ": no sentences to train a tokenizer on (the corpus is empty)");
  }
  return temporary.paths;
}

Tokenizer obtain_tokenizer(const PrepareCorpusOptions& options, const fs::path& work_dir) {
  if (!options.spm.empty()) return Tokenizer::from_file(options.spm);
  TokenizerTrainOptions trainer = options.tokenizer;
  TemporaryFiles temporary;
  trainer.inputs = tokenizer_inputs(options.train, work_dir, temporary);
  spdlog::info("training a joint {}-piece {} SentencePiece model", trainer.vocab_size, trainer.model_type);
  return Tokenizer::from_serialized(train_tokenizer(trainer), "trained model");
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
  ParallelTextReader reader = open_corpus(files);
  PreparedSplit split = prepare_split(reader, tokenizer, options);
  log_report(name, split.report, options.cleaning);
  if (split.data.size() == 0) {
    throw std::runtime_error(reader.describe() + ": no pair left after cleaning (check the files and " +
                             option_name("max_len") + ")");
  }
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
}

PreparedCorpus prepare_corpus(const PrepareCorpusOptions& options, const fs::path& work_dir,
                              const std::optional<Tokenizer>& given) {
  validate(options);
  const auto start = std::chrono::steady_clock::now();
  Tokenizer tokenizer = given ? *given : obtain_tokenizer(options, work_dir);
  const double tokenizer_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PreparedSplit train = prepare_corpus_split(options.train, "train", tokenizer, options.prepare);
  std::optional<PreparedSplit> valid;
  if (options.valid.given()) valid = prepare_corpus_split(options.valid, "valid", tokenizer, options.prepare);
  return {std::move(tokenizer), std::move(train), std::move(valid), tokenizer_seconds};
}

}  // namespace tfm
