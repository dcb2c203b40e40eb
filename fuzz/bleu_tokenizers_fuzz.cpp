// sacreBLEU's tokenizers (metrics/bleu_tokenizers.h), all four on every input.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz/fuzz_support.h"
#include "metrics/bleu_tokenizers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string segment(reinterpret_cast<const char*>(data), size);
  for (const auto tokenizer :
       {tfm::BleuTokenizer::k13a, tfm::BleuTokenizer::kIntl, tfm::BleuTokenizer::kChar, tfm::BleuTokenizer::kNone}) {
    try {
      const std::string joined = tfm::tokenize(tokenizer, segment);
      const auto tokens = tfm::tokenize_to_tokens(tokenizer, segment);
      std::string rejoined;
      for (const auto& token : tokens) {
        tfm::fuzz::require(!token.empty(), "no empty tokens");
        rejoined += (rejoined.empty() ? "" : " ") + token;
      }
      tfm::fuzz::require(rejoined == joined, "tokenize() is tokenize_to_tokens() joined by spaces");
      // Tokenizing only adds or removes spaces: idempotent for the whitespace-only tokenizer.
      if (tokenizer == tfm::BleuTokenizer::kNone) {
        tfm::fuzz::require(tfm::tokenize(tokenizer, joined) == joined, "`none` is idempotent");
      }
    } catch (const std::invalid_argument&) {
      // Malformed UTF-8, documented.
    }
  }
  return 0;
}
