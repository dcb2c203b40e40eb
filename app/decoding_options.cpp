#include "app/decoding_options.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace tfm {

void parse_sampling(const std::string& value, SamplingOptions& sampling) {
  sampling.enabled = value != "none";
  if (!sampling.enabled) return;
  const auto colon = value.find(':');
  const std::string kind = value.substr(0, colon);
  const std::string number = colon == std::string::npos ? "" : value.substr(colon + 1);
  try {
    size_t used = 0;
    if (kind == "topk") {
      sampling.top_k = std::stoll(number, &used);
      if (used == number.size() && sampling.top_k >= 1) return;
    } else if (kind == "topp") {
      sampling.top_p = std::stod(number, &used);
      if (used == number.size() && sampling.top_p > 0 && sampling.top_p <= 1) return;
    }
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("--sampling " + value + ": expected none, topk:K (K >= 1) or topp:P (0 < P <= 1)");
}

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
  add("--min-len", search.min_len, "No end of sentence before this many subwords");
  add("--unk-penalty", search.unk_penalty, "Subtracted from unk's log-probability");
  add("--no-repeat-ngram", search.no_repeat_ngram, "Never repeat an n-gram of this size");
  add("--sampling", options.sampling,
      "Draw each token instead of searching (back-translation): topk:K (among the K most probable) or topp:P "
      "(within the top-P probability mass); --beam is not used");
  add("--temperature", search.sampling.temperature, "With --sampling: divides the log-probabilities (<1 sharper)");
  add("--seed", search.sampling.seed, "With --sampling: the same seed, input and flags give the same translations");
  add("--max-tokens", options.translator.max_tokens, "Padded source subwords per batch");
  add("--batch-size", options.translator.batch_size, "Sentences per batch (0 = by --max-tokens only)");
  add("--max-source-len", options.translator.max_source_len, "Longer inputs are truncated, with a warning");
  add("--dtype", options.dtype,
      "auto (bfloat16 where the CPU or GPU computes it natively, else float32), float32, bfloat16 or float16 (CUDA)");
  add("--quantize", options.quantize, "none, or int8: int8 linear layers on the CPU (faster, BLEU within ~0.3)");
  CLI::Option* shortlist = command.add_flag(
      "--shortlist", options.shortlist,
      "Score each batch over the target subwords its source words can translate to (the model file's shortlist, "
      "from `tfm shortlist`): faster, BLEU within ~0.2");
  if (!group.empty()) shortlist->group(group);
}

void add_batch_workers_option(CLI::App& command, int64_t& workers, const std::string& group) {
  CLI::Option* option = command
                            .add_option("--workers", workers,
                                        "Batches decoded side by side, each on its share of --threads, sharing "
                                        "--max-tokens; a worker out of batches lends its cores to the rest "
                                        "(0 = one per core while each keeps 1000 source subwords)")
                            ->capture_default_str();
  if (!group.empty()) option->group(group);
}

int64_t batch_workers(int64_t workers, int64_t max_tokens) {
  // A batch much smaller than this leaves a core's products short of rows (BENCHMARKS.md).
  constexpr int64_t kAutoWorkerTokens = 1000;
  if (workers < 0) throw std::invalid_argument("--workers must be >= 0 (0: one per core)");
  if (workers > 0) return workers;
  return std::clamp<int64_t>(max_tokens / kAutoWorkerTokens, 1, torch::get_num_threads());
}

}  // namespace tfm
