#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "decode/translator.h"

namespace tfm {

/// How every command that translates (`translate`, `eval --model`) decodes: search, batching and
/// precision, with one set of flags. --nbest is not here: it shapes `translate`'s output only.
struct DecodingOptions {
  TranslatorOptions translator;
  std::string dtype = "auto";
  std::string quantize = "none";  // none | int8
};

/// Adds --beam, --lenpen, --max-len-a/-b, --unk-penalty, --no-repeat-ngram, --max-tokens,
/// --batch-size, --max-source-len, --dtype and --quantize, in help group `group` (empty = the default group).
void add_decoding_options(CLI::App& command, DecodingOptions& options, const std::string& group = "");

}  // namespace tfm
