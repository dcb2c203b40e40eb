// Batch-1 decoding with and without the step team (runtime/step_team.h), paired in one process:
// two translators of one model, one holding a team for each search and one waking LibTorch's
// pool for each loop, translate every line in turn, which goes first alternating by line and by
// pass. Paired so that the host's drift, which moves separate runs by more than the difference,
// falls on both alike. Run by bench/step_team.sh.
//   tfm-step-team-bench MODEL SOURCE [LINES] [DTYPE] [THREADS] [PASSES] [PATH]
// DTYPE: float32, bfloat16, or int8 (float32 with int8 linear layers, `--quantize int8`).
// PATH: translate (Translator::translate, as `tfm translate`) or stream (an IdTranslationStream
// stepped until the line is done, as `tfm serve` decodes a lone request).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "batch_one_setup.h"  // beside this file
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "translation/translator.h"

namespace {

/// `ids` translated through a stream of `translator`, as a server's running batch of one: the
/// best hypothesis's ids.
std::vector<int64_t> streamed(tfm::IdTranslator& translator, std::vector<int64_t> ids) {
  auto stream = translator.stream(translator.search_options());
  stream->add({std::move(ids)}, {0});
  std::vector<int64_t> best;
  while (stream->sentences() > 0) {
    for (auto& finished : stream->step()) {
      if (!finished.translation.nbest.empty()) best = finished.translation.nbest.front().tokens;
    }
  }
  return best;
}

/// The benchmark: prints its figures, returns the exit code.
int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL SOURCE [LINES] [DTYPE] [THREADS] [PASSES] [translate|stream]\n", argv[0]);
    return 2;
  }
  const auto [lines, dtype, threads] = tfm::bench::batch_one_arguments(argc, argv, 2);
  const int passes = argc > 6 ? std::stoi(argv[6]) : 3;
  const std::string path = argc > 7 ? argv[7] : "translate";
  if (path != "translate" && path != "stream") throw std::invalid_argument("PATH: translate or stream, not " + path);
  auto loaded = tfm::load_model_file(argv[1], torch::kCPU);
  const auto tokenizer = tfm::Tokenizer::from_serialized(loaded.tokenizer_proto);
  std::vector<std::unique_ptr<tfm::Translator>> translators;  // [0]: with the team, [1]: without
  for (const bool team : {true, false}) {
    tfm::TranslatorOptions options = tfm::bench::decoding_options(dtype);
    options.step_team = team;
    translators.push_back(std::make_unique<tfm::Translator>(std::vector<tfm::Transformer>{loaded.model}, tokenizer,
                                                            options, torch::kCPU));
  }
  std::array<double, 2> ms{0, 0};
  int64_t differing = 0;
  for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms up: allocations, kernels for every row count
    for (size_t i = 0; i < lines.size(); ++i) {
      std::array<std::string, 2> outputs;
      for (size_t turn = 0; turn < 2; ++turn) {
        const size_t which = (turn + i + static_cast<size_t>(pass)) % 2;
        const auto start = std::chrono::steady_clock::now();
        if (path == "stream") {
          outputs[which] = tokenizer.decode(streamed(translators[which]->ids(), tokenizer.encode(lines[i])));
        } else {
          outputs[which] = translators[which]->translate({lines[i]})[0].text();
        }
        const std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - start;
        if (pass > 0) ms[which] += spent.count();
      }
      if (pass == 0 && outputs[0] != outputs[1]) ++differing;
    }
  }
  const double sentences = static_cast<double>(passes) * static_cast<double>(lines.size());
  std::printf(
      "%s, %s, %zu sentences one at a time x %d passes, %d thread(s): with the step team %.2f ms per sentence, "
      "without %.2f (%.3f of it); translations differing: %lld\n",
      path.c_str(), dtype.c_str(), lines.size(), passes, threads, ms[0] / sentences, ms[1] / sentences, ms[0] / ms[1],
      static_cast<long long>(differing));
  return differing == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return tfm::bench::main_of(argc, argv, run); }
