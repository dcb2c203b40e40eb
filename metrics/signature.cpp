#include "metrics/signature.h"

#include <cstdio>

namespace tfm {

std::string signature_version() { return std::string("tfm-") + TFM_VERSION; }

std::string bleu_signature(const BleuOptions& options, size_t num_refs, const std::string& version) {
  std::string smooth = smooth_method_name(options.smooth_method);
  if (options.smooth_method == SmoothMethod::kFloor || options.smooth_method == SmoothMethod::kAddK) {
    char value[64];
    std::snprintf(value, sizeof(value), "[%.2f]", smooth_value_or_default(options));
    smooth += value;
  }
  return "nrefs:" + std::to_string(num_refs) + "|case:" + (options.lowercase ? "lc" : "mixed") +
         "|eff:" + (options.effective_order ? "yes" : "no") + "|tok:" + tokenizer_name(options.tokenizer) +
         "|smooth:" + smooth + "|version:" + version;
}

std::string chrf_signature(const ChrfOptions& options, size_t num_refs, const std::string& version) {
  // eff:yes is sacreBLEU's default effective-order averaging (tfm has no epsilon smoothing);
  // space:no because whitespace is removed before counting character n-grams.
  return "nrefs:" + std::to_string(num_refs) + "|case:" + (options.lowercase ? "lc" : "mixed") +
         "|eff:yes|nc:" + std::to_string(options.char_order) + "|nw:" + std::to_string(options.word_order) +
         "|space:no|version:" + version;
}

}  // namespace tfm
