// What beam search does with each step's logits on the CPU: the log-softmax normalizers with
// their block maxima (model/log_normalizer.h), then the top 2K of each sentence's K rows
// (decode/beam_top_k.h) with and without the maxima, float32 and bfloat16 logits.
// Built on demand: bench/logit_rows.sh.
//   tfm-logit-rows-bench [SENTENCES] [VOCABULARY] [REPEATS]
#include <cstdio>
#include <cstdlib>

#include <torch/torch.h>

#include "best_ms.h"  // beside this file
#include "decode/beam_top_k.h"
#include "model/log_normalizer.h"

namespace {

using tfm::bench::best_ms;

constexpr int64_t kBeam = 4;

}  // namespace

int main(int argc, char** argv) {
  const int64_t sentences = argc > 1 ? std::atol(argv[1]) : 64;
  const int64_t vocabulary = argc > 2 ? std::atol(argv[2]) : 8000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 50;
  if (sentences < 1 || vocabulary < 2 || repeats < 1) {
    std::fprintf(stderr, "usage: %s [SENTENCES >= 1] [VOCABULARY >= 2] [REPEATS >= 1]\n", argv[0]);
    return 2;
  }
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  const int64_t rows = sentences * kBeam;
  std::printf("%lld sentences x beam %lld = %lld rows of %lld logits, %d threads\n", static_cast<long long>(sentences),
              static_cast<long long>(kBeam), static_cast<long long>(rows), static_cast<long long>(vocabulary),
              at::get_num_threads());
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    // Logits spread like a trained model's (a few large, most far below), beams' scores apart.
    const auto logits = (torch::randn({rows, vocabulary}) * 3.0).to(dtype);  // [N, V]
    const auto beam_scores = -torch::rand({rows}) * 10.0;                    // [N]
    const double normalizers_ms = best_ms(repeats, [&] { tfm::log_normalizers(logits); });
    // Members, not a structured binding: lambdas capture bindings only from C++20 on.
    const auto normalized = tfm::log_normalizers(logits);
    const auto& block_maxima = normalized.block_maxima;
    const auto offsets = beam_scores - normalized.normalizers;
    const double scan_ms = best_ms(repeats, [&] { tfm::beam_top_k(logits, offsets, kBeam, 2 * kBeam); });
    const double skip_ms = best_ms(repeats, [&] { tfm::beam_top_k(logits, offsets, kBeam, 2 * kBeam, block_maxima); });
    std::printf("%-8s logits: normalizers %7.3f ms, top-k %7.3f ms reading every cell, %7.3f ms with block maxima\n",
                dtype == torch::kFloat32 ? "float32" : "bfloat16", normalizers_ms, scan_ms, skip_ms);
  }
  return 0;
}
