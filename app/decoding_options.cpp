#include "app/decoding_options.h"

namespace tfm {

void add_decoding_options(CLI::App& command, DecodingOptions& options, const std::string& group) {
  auto& search = options.translator.search;
  auto add = [&](const std::string& name, auto& value, const std::string& help) {
    CLI::Option* option = command.add_option(name, value, help)->capture_default_str();
    if (!group.empty()) option->group(group);
  };
  add("--beam", search.beam, "Beam size (1 = greedy)");
  add("--lenpen", search.length_penalty, "Length penalty alpha: ((5+len)/6)^alpha");
  add("--max-len-a", search.max_len_a, "Max output length = a * source length + b");
  add("--max-len-b", search.max_len_b, "See --max-len-a");
  CLI::Option* early = command.add_flag("--early-stop", search.early_stop,
                                        "End a sentence's beam search once it has --beam finished hypotheses "
                                        "(fairseq's rule; faster) instead of once no live beam can win");
  if (!group.empty()) early->group(group);
  add("--unk-penalty", search.unk_penalty, "Subtracted from unk's log-probability");
  add("--no-repeat-ngram", search.no_repeat_ngram, "Never repeat an n-gram of this size");
  add("--max-tokens", options.translator.max_tokens, "Padded source subwords per batch");
  add("--batch-size", options.translator.batch_size, "Sentences per batch (0 = by --max-tokens only)");
  add("--max-source-len", options.translator.max_source_len, "Longer inputs are truncated, with a warning");
  add("--dtype", options.dtype,
      "auto (bfloat16 where the CPU or GPU computes it natively, else float32), float32, bfloat16 or float16 (CUDA)");
  add("--quantize", options.quantize, "none, or int8: int8 linear layers on the CPU (faster, BLEU within ~0.3)");
}

}  // namespace tfm
