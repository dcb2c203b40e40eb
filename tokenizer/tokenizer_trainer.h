#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

/// How to train a SentencePiece model. The paper shares one vocabulary between source and
/// target (§5.1), so all `inputs` feed a single joint model.
struct TokenizerTrainOptions {
  std::vector<std::string> inputs;     // text files, one sentence a line (.gz read transparently)
  std::string model_type = "unigram";  // "unigram" or "bpe"
  int64_t vocab_size = 8000;
  double character_coverage = 1.0;         // 1.0 for Latin scripts; ~0.9995 for CJK-heavy corpora
  std::string normalization = "nmt_nfkc";  // SentencePiece rule: nmt_nfkc, nfkc, identity, ...
  // Sample at most this many lines (0 = all). SentencePiece's unigram trainer holds ~2.5 KB per
  // sampled sentence (its suffix array): 200k keep `tfm prepare` under 1 GB (BENCHMARKS.md).
  int64_t max_sentences = 200000;
  int threads = 0;  // 0 = all cores
  uint32_t seed = 1;
};

/// Throws std::invalid_argument for a bad option value.
void validate(const TokenizerTrainOptions& options);

/// Trains a model with tfm's special ids and returns the serialized model (a `.model` file's bytes).
/// Throws std::runtime_error for unreadable inputs or when SentencePiece fails (e.g. a
/// vocabulary larger than the corpus can give, with SentencePiece's own explanation).
std::string train_tokenizer(const TokenizerTrainOptions& options);

}  // namespace tfm
