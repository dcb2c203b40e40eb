#pragma once
// Shared by the translation tests: a tokenizer small enough to train in a test.
#include <string>

#include "tests/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace tfm::testing {

/// A 25-piece tokenizer trained on a few English and German number phrases ("one cats .",
/// "drei Hunde ."): enough for untrained models that check plumbing, not translation quality.
inline Tokenizer number_phrase_tokenizer() {
  TempDir dir;
  std::string text;
  const char* words[] = {"one", "two", "three", "cats", "dogs", "und", "Katzen", "Hunde", "drei", "zwei"};
  for (int i = 0; i < 400; ++i) text += std::string(words[i % 10]) + " " + words[(i * 7) % 10] + " .\n";
  write_text(dir / "corpus.txt", text);
  TokenizerTrainOptions options;
  options.inputs = {(dir / "corpus.txt").string()};
  options.vocab_size = 25;
  return Tokenizer::from_serialized(train_tokenizer(options));
}

}  // namespace tfm::testing
