#pragma once
// Corpora for the data pipeline's tests: a small parallel text with its joint tokenizer, and
// synthetic tokenized datasets of chosen lengths.
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/parallel_dataset.h"
#include "data/parallel_text_reader.h"
#include "data/prepare_dataset.h"
#include "data/shard.h"
#include "tests/test_support.h"
#include "text/special_ids.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace tfm::testing {

/// `count` aligned English/German sentence pairs of varying length, built deterministically.
inline std::pair<std::vector<std::string>, std::vector<std::string>> parallel_sentences(int count) {
  static const std::vector<std::pair<std::string, std::string>> kWords = {
      {"a", "ein"},     {"man", "Mann"},      {"rides", "fährt"},  {"bike", "Fahrrad"}, {"over", "über"},
      {"the", "die"},   {"street", "Straße"}, {"two", "zwei"},     {"dogs", "Hunde"},   {"play", "spielen"},
      {"in", "im"},     {"snow", "Schnee"},   {"girl", "Mädchen"}, {"reads", "liest"},  {"book", "Buch"},
      {"café", "Café"}, {"green", "grüne"},   {"house", "Haus"},   {"and", "und"},      {"smiles", "lächelt"}};
  std::vector<std::string> source, target;
  uint32_t state = 2024;
  for (int line = 0; line < count; ++line) {
    std::string en, de;
    const int length = 1 + line % 13;
    for (int i = 0; i < length; ++i) {
      state = state * 1664525u + 1013904223u;
      const auto& [english, german] = kWords[(state >> 8) % kWords.size()];
      en += (i ? " " : "") + english;
      de += (i ? " " : "") + german;
    }
    source.push_back(en + ".");
    target.push_back(de + ".");
  }
  return {source, target};
}

/// Writes `lines` one a line, gzip-compressed when `path` ends in .gz.
inline void write_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  if (path.extension() != ".gz") return write_text(path, text);
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  gzclose(file);
}

/// A 100-piece joint model of parallel_sentences(), trained once per test binary.
inline const Tokenizer& parallel_tokenizer() {
  static const Tokenizer tokenizer = [] {
    TempDir dir;
    const auto [source, target] = parallel_sentences(2000);
    write_lines(dir / "train.en", source);
    write_lines(dir / "train.de", target);
    TokenizerTrainOptions options;
    options.inputs = {(dir / "train.en").string(), (dir / "train.de").string()};
    options.vocab_size = 100;
    return Tokenizer::from_serialized(train_tokenizer(options));
  }();
  return tokenizer;
}

/// `pairs` pairs of random ids in [kNumSpecialIds, vocab_size), each side 1..max_len long.
inline ParallelDataset random_dataset(int64_t pairs, int64_t max_len, uint64_t seed, int64_t vocab_size = 1000) {
  ParallelDataset data;
  uint64_t state = seed;
  auto next = [&state](int64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(bound));
  };
  for (int64_t i = 0; i < pairs; ++i) {
    std::vector<int64_t> source(1 + next(max_len)), target(1 + next(max_len));
    for (auto& id : source) id = kNumSpecialIds + next(vocab_size - kNumSpecialIds);
    for (auto& id : target) id = kNumSpecialIds + next(vocab_size - kNumSpecialIds);
    data.append(source, target);
  }
  return data;
}

/// `data` as an in-memory shard (ids must lie below `vocab_size`).
inline Shard as_shard(const ParallelDataset& data, int64_t vocab_size = 1000) {
  return Shard::from_dataset(data, vocab_size, "test data");
}

/// as_shard(random_dataset(...)).
inline Shard random_shard(int64_t pairs, int64_t max_len, uint64_t seed, int64_t vocab_size = 1000) {
  return as_shard(random_dataset(pairs, max_len, seed, vocab_size), vocab_size);
}

/// The message of the exception of type E that `action` throws ("" when it throws none).
template <class E, class Action>
std::string error_of(Action action) {
  try {
    action();
  } catch (const E& error) {
    return error.what();
  }
  return "";
}

/// prepare_split over two aligned files, or one TSV file when `target_path` is empty.
inline PreparedSplit prepare_files(const std::string& source_path, const std::string& target_path,
                                   const Tokenizer& tokenizer, const PrepareOptions& options) {
  ParallelTextReader reader = target_path.empty() ? ParallelTextReader::open_tsv(source_path)
                                                  : ParallelTextReader::open_files(source_path, target_path);
  return prepare_split(reader, tokenizer, options);
}

}  // namespace tfm::testing
