#pragma once
// Raw parallel text -> a tokenizer and cleaned, tokenized splits: the one preparation path that
// `tfm prepare` (which then writes a prepared directory) and `tfm train` on raw text share.
#include <filesystem>
#include <optional>
#include <string>

#include "data/prepare_dataset.h"
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
  CorpusFiles train, valid;         // valid is optional
  std::string spm;                  // an existing SentencePiece model; empty = train a joint one
  TokenizerTrainOptions tokenizer;  // when training one (its `inputs` are filled in here)
  PrepareOptions prepare;           // cleaning rules and tokenization threads
};

struct PreparedCorpus {
  Tokenizer tokenizer;
  PreparedSplit train;
  std::optional<PreparedSplit> valid;
  double tokenizer_seconds = 0;  // spent training the tokenizer (0 when given or loaded)
};

/// One split, tokenized with `tokenizer` and cleaned; its counts are logged under `name`.
/// Throws std::runtime_error naming file and line of bad input, or when cleaning leaves nothing.
PreparedSplit prepare_corpus_split(const CorpusFiles& files, const std::string& name, const Tokenizer& tokenizer,
                                   const PrepareOptions& options);

/// Throws std::invalid_argument for bad flags, before any file is read.
void validate(const PrepareCorpusOptions& options);

/// The tokenizer is `given`, else --spm, else a joint model trained on the training text as
/// sentences: each side is first written out, one clean sentence a line, to temporary files in
/// `work_dir`, so no tab or markup reaches the vocabulary and misaligned or non-UTF-8 input fails
/// before tokenizer training starts. Then each split is
/// tokenized and cleaned on all cores (counts logged). Throws std::runtime_error naming the file
/// and line of bad input, or when cleaning leaves a split empty.
PreparedCorpus prepare_corpus(const PrepareCorpusOptions& options, const std::filesystem::path& work_dir,
                              const std::optional<Tokenizer>& given = std::nullopt);

}  // namespace tfm
