// Batch-1 decoding in process: milliseconds per sentence and LibTorch op calls per output subword.
// One thread by default, so that the time is the decoding thread's own work with no partner to
// wait for; in process, so that no pipe or process start adds to it. Run by
// bench/decode_overhead.sh; a figure to compare before and after a change on one machine.
//   tfm-decode-overhead-bench MODEL SOURCE [LINES] [DTYPE] [THREADS]
// DTYPE: float32, bfloat16, or int8 (float32 with int8 linear layers, `--quantize int8`).
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "batch_one_setup.h"  // beside this file
#include "best_ms.h"          // beside this file
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "translation/translator.h"

namespace {

// Op calls by name while counting is on (nested calls included: layer_norm counts its empty()s).
std::map<std::string, int64_t> g_calls;
bool g_counting = false;

/// Op calls by name during `run`, most frequent first.
template <typename Run>
std::vector<std::pair<int64_t, std::string>> op_calls_during(Run run) {
  at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& call) -> std::unique_ptr<at::ObserverContext> {
        if (g_counting) ++g_calls[call.name()];
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION}));
  g_counting = true;
  run();
  g_counting = false;
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [name, count] : g_calls) by_count.emplace_back(count, name);
  std::sort(by_count.rbegin(), by_count.rend());
  return by_count;
}

/// The benchmark: prints its figures, returns the exit code.
int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL SOURCE [LINES] [DTYPE] [THREADS]\n", argv[0]);
    return 2;
  }
  // Named members, not a structured binding: C++17 lets no lambda capture a binding (clang refuses).
  const auto arguments = tfm::bench::batch_one_arguments(argc, argv, 1);
  const auto& lines = arguments.lines;
  const auto& dtype = arguments.dtype;
  const int threads = arguments.threads;
  auto loaded = tfm::load_model_file(argv[1], torch::kCPU);
  const tfm::TranslatorOptions options = tfm::bench::decoding_options(dtype);
  tfm::Translator translator({loaded.model}, tfm::Tokenizer::from_serialized(loaded.tokenizer_proto), options,
                             torch::kCPU);
  auto each_alone = [&] {
    int64_t subwords = 0;
    for (const auto& line : lines) {
      const auto nbest = translator.translate({line})[0].nbest;  // empty for an empty line
      if (!nbest.empty()) subwords += static_cast<int64_t>(nbest[0].ids.size()) + 1;
    }
    return std::max<int64_t>(subwords, 1);  // with each </s>
  };
  each_alone();  // warm up: allocations, kernels for every row count
  const double ms = tfm::bench::best_ms(1, each_alone) / static_cast<double>(lines.size());

  int64_t subwords = 0;
  const auto by_count = op_calls_during([&] { subwords = each_alone(); });
  int64_t calls = 0;
  for (const auto& [count, name] : by_count) calls += count;
  std::printf("%s, %zu sentences one at a time, %d thread(s): %.2f ms per sentence; %.0f op calls per output subword\n",
              dtype.c_str(), lines.size(), threads, ms, static_cast<double>(calls) / static_cast<double>(subwords));
  for (size_t i = 0; i < by_count.size() && i < 12; ++i) {
    std::printf("  %-28s %7.1f per subword\n", by_count[i].second.c_str(),
                static_cast<double>(by_count[i].first) / static_cast<double>(subwords));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tfm::bench::main_of(argc, argv, run); }
