#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "translation/translator.h"

namespace tfm {

/// How every command that translates (`translate`, `eval --model`) decodes: search, batching and
/// precision, with one set of flags. --nbest is not here: it shapes `translate`'s output only.
struct DecodingOptions {
  TranslatorOptions translator;
  std::string dtype = "auto";
  std::string quantize = "none";  // none | int8
  std::string sampling = "none";  // none | topk:K | topp:P
  bool shortlist = false;         // decode over the model file's shortlist (`tfm shortlist`)
};

/// --sampling's value into `sampling` (enabled, top_k or top_p; temperature and seed are set by
/// their own flags). std::invalid_argument naming the flag for anything else.
void parse_sampling(const std::string& value, SamplingOptions& sampling);

/// Adds --beam, --lenpen, --max-len-a/-b, --min-len, --unk-penalty, --no-repeat-ngram, --sampling,
/// --temperature, --seed, --max-tokens, --batch-size, --max-source-len, --dtype, --quantize and --shortlist, in
/// help group `group` (empty = the default group).
void add_decoding_options(CLI::App& command, DecodingOptions& options, const std::string& group = "");
/// Adds --workers (batches decoded side by side) for the commands that translate a whole file
/// (`translate`, `eval --model`; `tfm serve` has workers of its own).
void add_batch_workers_option(CLI::App& command, int64_t& workers, const std::string& group = "");
/// --workers as given (>= 1), or for 0 one per core of LibTorch's threads while each batch keeps
/// at least 1000 source subwords of --max-tokens. std::invalid_argument when negative.
int64_t batch_workers(int64_t workers, int64_t max_tokens);

}  // namespace tfm
