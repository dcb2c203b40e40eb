#pragma once
// Raw parallel text -> cleaned, tokenized pairs, streamed: what `tfm prepare` writes into shard
// files as it goes, and what a raw validation set becomes in memory.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

/// Receives each kept pair's ids (no bos/eos), in corpus order.
using PairSink = std::function<void(const std::vector<int64_t>& source, const std::vector<int64_t>& target)>;

/// Reads every pair from `reader`, tokenizes it on all cores and hands the pairs that pass the
/// cleaning rules to `keep`, in corpus order, holding one chunk of text at a time. Dropped pairs
/// are counted in the report (and each logged at debug level with its file and line). Progress
/// is logged as `phase` with an estimate of the time left. Throws what the reader throws
/// (std::runtime_error naming file and line), what `keep` throws, and std::invalid_argument for
/// bad options.
CleaningReport prepare_split(ParallelTextReader& reader, const Tokenizer& tokenizer, const PrepareOptions& options,
                             const PairSink& keep, const std::string& phase = "encoding");

/// A prepared corpus in memory and what cleaning dropped from it.
struct PreparedSplit {
  ParallelDataset data;
  CleaningReport report;
};

/// prepare_split into memory (a validation set, tests).
PreparedSplit prepare_split(ParallelTextReader& reader, const Tokenizer& tokenizer, const PrepareOptions& options);

}  // namespace tfm
