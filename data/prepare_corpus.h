#pragma once
// Raw parallel text -> a prepared directory (data/prepared_dir.h): the one preparation path that
// `tfm prepare` and `tfm train` on raw text share. It streams: memory stays bounded by a chunk of
// text, one shard's index and the tokenizer's sample, whatever the corpus size.
#include <filesystem>
#include <optional>
#include <string>

#include "data/prepare_dataset.h"
#include "data/split_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace tfm {

/// One split's text: two aligned files (.gz, .sgm/.xml allowed), or one source<TAB>target file.
struct CorpusFiles {
  std::string source, target, tsv;
  bool given() const { return !source.empty() || !target.empty() || !tsv.empty(); }
};

/// Throws std::invalid_argument naming the --NAME-src/--NAME-tgt/--NAME-tsv flags when `files`
/// mixes the two forms, gives one side only, or (when `required`) gives nothing.
void validate(const CorpusFiles& files, const std::string& name, bool required);

/// Opens the split for reading pairs.
ParallelTextReader open_corpus(const CorpusFiles& files);

struct PrepareCorpusOptions {
  CorpusFiles train, valid;                   // valid is optional
  std::string spm;                            // an existing SentencePiece model; empty = train a joint one
  TokenizerTrainOptions tokenizer;            // when training one (its `inputs` are filled in here)
  PrepareOptions prepare;                     // cleaning rules and tokenization threads
  uint64_t shard_bytes = kDefaultShardBytes;  // bound on each training shard file
};

/// What prepare_corpus wrote.
struct PreparedCorpus {
  Tokenizer tokenizer;
  CleaningReport train, valid;  // valid: all zero without a validation corpus
  std::vector<std::string> train_files;
  double tokenizer_seconds = 0;  // sampling and training the tokenizer (0 when given)
  double encode_seconds = 0;     // reading, tokenizing, cleaning and writing both splits
};

/// One split in memory, tokenized with `tokenizer` and cleaned; its counts are logged under
/// `name`. Throws std::runtime_error naming file and line of bad input, or when cleaning leaves nothing.
PreparedSplit prepare_corpus_split(const CorpusFiles& files, const std::string& name, const Tokenizer& tokenizer,
                                   const PrepareOptions& options);

/// Throws std::invalid_argument for bad flags, before any file is read.
void validate(const PrepareCorpusOptions& options);

/// Writes the prepared directory `out_dir` (created if missing): spm.model, the training shards
/// and valid.bin (a valid.bin from an earlier preparation is removed when there is no validation
/// corpus). The tokenizer is `given`, else --spm, else a joint model trained on a sample of the
/// training pairs drawn uniformly from the whole corpus (at most options.tokenizer.max_sentences
/// sentences), written one clean sentence a line to temporary files in `out_dir`: no tab or markup
/// reaches the vocabulary, and misaligned or non-UTF-8 input fails before tokenizer training
/// starts. Each phase logs its progress. Throws std::runtime_error naming the file and line of bad
/// input, or when cleaning leaves a split empty.
PreparedCorpus prepare_corpus(const PrepareCorpusOptions& options, const std::filesystem::path& out_dir,
                              const std::optional<Tokenizer>& given = std::nullopt);

}  // namespace tfm
