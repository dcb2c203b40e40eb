#pragma once
// A tokenized parallel corpus held as two flat id arrays with offsets (as fairseq's indexed
// datasets): one allocation per side instead of one vector per sentence, so a WMT14-sized
// corpus (4.5M pairs, ~280M subwords) takes ~1.2 GB rather than several.
#include <cstdint>
#include <vector>

namespace tfm {

/// One side of a tokenized corpus: sentence i is tokens[offsets[i] .. offsets[i+1]) (no bos/eos stored).
struct TokenizedSide {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};

  /// Number of sentences.
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  /// Subwords in sentence i (bos/eos not counted).
  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
  /// First id of sentence i; the sentence is data(i)[0 .. length(i)).
  const int32_t* data(int64_t i) const { return tokens.data() + offsets[i]; }
  /// Sentence i's ids, widened for Tokenizer::decode and tensors.
  std::vector<int64_t> ids(int64_t i) const { return {data(i), data(i) + length(i)}; }
  /// Appends one sentence.
  void append(const std::vector<int64_t>& ids);
  /// Total subwords on this side.
  int64_t total_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

/// Aligned source and target sides: pair i is (source sentence i, target sentence i).
struct ParallelDataset {
  TokenizedSide source, target;

  /// Number of pairs.
  int64_t size() const { return source.size(); }
  /// Appends one pair.
  void append(const std::vector<int64_t>& source_ids, const std::vector<int64_t>& target_ids);
};

}  // namespace tfm
