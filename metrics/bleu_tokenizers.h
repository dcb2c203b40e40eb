#pragma once
// The tokenizers sacreBLEU applies before counting BLEU n-grams. Scores are only comparable
// when the tokenization is identical, so each one reproduces sacreBLEU 2.6.0 character for
// character (checked against its outputs in ../shared/testdata/bleu/tokenize_*.tsv).
#include <string>
#include <vector>

namespace tfm {

enum class BleuTokenizer {
  k13a,   // mteval-v13a.pl, WMT's standard and sacreBLEU's default
  kIntl,  // mteval-v14.pl --international-tokenization: Unicode punctuation and symbols
  kChar,  // every non-space character is a token (for languages written without spaces)
  kNone,  // whitespace only, for text the user tokenized already
};

/// "13a", "intl", "char" or "none"; throws std::invalid_argument naming the choices.
BleuTokenizer parse_bleu_tokenizer(const std::string& name);

/// The name in sacreBLEU's signature (`tok:13a`).
std::string tokenizer_name(BleuTokenizer tokenizer);

/// Tokenizes one segment (UTF-8) and returns its tokens joined by single spaces: sacreBLEU's
/// tokenizer output after the str.split() that BLEU applies to it. Throws std::invalid_argument
/// on malformed UTF-8.
std::string tokenize(BleuTokenizer tokenizer, const std::string& segment);

/// The same, split into tokens.
std::vector<std::string> tokenize_to_tokens(BleuTokenizer tokenizer, const std::string& segment);

}  // namespace tfm
