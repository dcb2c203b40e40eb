// One decoding step's attention over a layer's caches (model/step_attention.h) at a batch's shapes,
// float32 throughout, bfloat16 keys and values under a float32 query (int8 decoding's caches), and
// bfloat16 throughout (bfloat16 decoding).
// Built on demand: bench/step_attention.sh.
//   tfm-step-attention-bench [SENTENCES] [POSITIONS] [REPEATS]
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <torch/torch.h>

#include "best_ms.h"  // beside this file
#include "model/step_attention.h"

namespace {

using tfm::bench::best_ms;
constexpr int64_t kBeam = 4, kHeads = 8, kHeadDim = 64;  // base size: d_model 512

}  // namespace

int main(int argc, char** argv) {
  const int64_t sentences = argc > 1 ? std::atol(argv[1]) : 300;
  const int64_t positions = argc > 2 ? std::atol(argv[2]) : 20;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 20;
  if (sentences < 1 || positions < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: %s [SENTENCES >= 1] [POSITIONS >= 1] [REPEATS >= 1]\n", argv[0]);
    return 2;
  }
  torch::NoGradGuard no_grad;
  const int64_t rows = sentences * kBeam;
  std::printf(
      "%lld sentences x beam %lld = %lld rows, %lld heads of %lld, %lld positions (self) and %lld source "
      "positions (cross), %d threads\n",
      static_cast<long long>(sentences), static_cast<long long>(kBeam), static_cast<long long>(rows),
      static_cast<long long>(kHeads), static_cast<long long>(kHeadDim), static_cast<long long>(positions),
      static_cast<long long>(positions), at::get_num_threads());
  const std::pair<torch::ScalarType, torch::ScalarType> kinds[] = {
      {torch::kFloat32, torch::kFloat32}, {torch::kFloat32, torch::kBFloat16}, {torch::kBFloat16, torch::kBFloat16}};
  for (const auto& [query_dtype, cache_dtype] : kinds) {
    const auto stored = torch::TensorOptions(cache_dtype);
    const auto computed = torch::TensorOptions(query_dtype);
    // Self-attention: time-major caches [capacity, N, H, Dh] read through [N, H, T, Dh] views, and
    // the query a head view of the fused projection, as DecoderLayerImpl::step passes them.
    const int64_t capacity = (positions + 16) / 16 * 16;
    const auto self_keys = torch::randn({capacity, rows, kHeads, kHeadDim}, stored).narrow(0, 0, positions);
    const auto self_values = torch::randn({capacity, rows, kHeads, kHeadDim}, stored).narrow(0, 0, positions);
    const auto self_query = torch::randn({rows, 1, 3, kHeads, kHeadDim}, computed).select(2, 0).permute({0, 2, 1, 3});
    // Cross-attention: one copy of the encoder projections per sentence [M, H, S, Dh], the K rows
    // of a sentence as K queries over it.
    const auto memory_keys = torch::randn({sentences, kHeads, positions, kHeadDim}, stored);
    const auto memory_values = torch::randn({sentences, kHeads, positions, kHeadDim}, stored);
    const auto cross_query =
        torch::randn({rows, kHeads, kHeadDim}, computed).view({sentences, kBeam, kHeads, kHeadDim}).transpose(1, 2);
    const auto bias = torch::zeros({sentences, 1, 1, positions}, computed);
    const double self_ms = best_ms(repeats, [&] {
      tfm::step_attention(self_query, self_keys.permute({1, 2, 0, 3}), self_values.permute({1, 2, 0, 3}), {});
    });
    const double cross_ms =
        best_ms(repeats, [&] { tfm::step_attention(cross_query, memory_keys, memory_values, bias); });
    const double self_mb = 2.0 * self_keys.numel() * self_keys.element_size() / 1e6;
    const auto name = [](torch::ScalarType dtype) { return dtype == torch::kFloat32 ? "float32" : "bfloat16"; };
    std::printf("%-8s queries, %-8s caches: self %7.3f ms (%5.1f GB/s of keys and values), cross %7.3f ms\n",
                name(query_dtype), name(cache_dtype), self_ms, self_mb / self_ms, cross_ms);
  }
  return 0;
}
