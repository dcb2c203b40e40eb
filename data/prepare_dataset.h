#pragma once
// Raw parallel text -> cleaned, tokenized ParallelDataset: what `tfm prepare` does before
// writing, and what `tfm train` can call directly on raw text.
#include <cstdint>
#include <string>

#include "data/cleaning.h"
#include "data/parallel_dataset.h"
#include "data/parallel_text_reader.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

/// How to prepare a corpus.
struct PrepareOptions {
  CleaningOptions cleaning;
  int threads = 0;              // tokenization workers (0 = all cores)
  int64_t chunk_pairs = 65536;  // pairs read and tokenized at a time (bounds the text held in memory)
};

/// A prepared corpus and what cleaning dropped from it.
struct PreparedSplit {
  ParallelDataset data;
  CleaningReport report;
};

/// Reads every pair from `reader`, tokenizes it on all cores and keeps the pairs that pass the
/// cleaning rules, in corpus order. Dropped pairs are counted in the report (and each logged at
/// debug level with its file and line). Throws what the reader throws (std::runtime_error naming
/// file and line) and std::invalid_argument for bad options. Logs progress at info level.
PreparedSplit prepare_split(ParallelTextReader& reader, const Tokenizer& tokenizer, const PrepareOptions& options);

}  // namespace tfm
