// A decoding step's products at a beam's few rows: microseconds a call and the weight bytes
// streamed per second, for each of a small Transformer's shapes from memory and warm in cache,
// float32 and (where native) bfloat16, on one thread and on all. Only for bench/small_rows.sh.
//   tfm-small-rows-bench [ROWS] [D_MODEL] [D_FF] [VOCABULARY] [LAYERS] [DEAD]
// DEAD: the share of the feed-forward output's inputs zero in every row (0: every input summed).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "best_ms.h"  // beside this file
#include "model/packed_weight.h"
#include "model/small_rows_product.h"

namespace {

/// Bytes of an [out, in] weight in `dtype` (float32 or bfloat16): what a product streams.
double weight_bytes(int64_t out, int64_t in, torch::ScalarType dtype) {
  return static_cast<double>(out * in) * (dtype == torch::kFloat32 ? 4 : 2);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4;
  const int64_t d = argc > 2 ? std::atoll(argv[2]) : 256;
  const int64_t ff = argc > 3 ? std::atoll(argv[3]) : 1024;
  const int64_t vocabulary = argc > 4 ? std::atoll(argv[4]) : 8000;
  const int64_t layers = argc > 5 ? std::atoll(argv[5]) : 3;
  // The share of the feed-forward output's inputs that are zero in every row: a ReLU's output,
  // 0.64 at a beam's 4 rows in both trained models (BENCHMARKS.md).
  const double dead = argc > 6 ? std::atof(argv[6]) : 0.64;
  torch::NoGradGuard no_grad;
  const int all = at::get_num_threads();
  // A decoder layer's products ([out, in]) and the output layer's.
  const std::vector<std::pair<int64_t, int64_t>> shapes{{3 * d, d}, {d, d},  {d, d},         {d, d},
                                                        {ff, d},    {d, ff}, {vocabulary, d}};
  const char* names[] = {"self q,k,v", "self out", "cross q", "cross out", "ffn in", "ffn out", "output"};
  const size_t relu_input = 5;                               // "ffn out"
  auto input = [&](size_t shape, torch::ScalarType dtype) {  // [rows, 1, in]
    const int64_t in = shapes[shape].second;
    auto x = torch::randn({rows, 1, in});
    if (shape == relu_input) x = x.relu().masked_fill(torch::rand({1, 1, in}) < dead, 0.0);
    return x.to(dtype);
  };
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    if (!tfm::SmallRowsProduct::supported(torch::zeros({2, 2}, dtype))) continue;
    for (const int threads : {1, all}) {
      at::set_num_threads(threads);
      std::printf("%s, %d rows, %d thread(s):\n", dtype == torch::kFloat32 ? "float32" : "bfloat16",
                  static_cast<int>(rows), threads);
      // A whole step: every layer's own weights and then the output layer's, so that the weights
      // stream from wherever a step finds them (a 3-layer float32 decoder's 19 MB outgrow L2).
      std::vector<tfm::PackedWeight> step;
      std::vector<torch::Tensor> step_inputs, step_biases;
      double step_bytes = 0;
      for (int64_t layer = 0; layer < layers; ++layer) {
        for (size_t i = 0; i + 1 < shapes.size() || (layer + 1 == layers && i < shapes.size()); ++i) {
          const auto [out, in] = shapes[i];
          step.emplace_back(torch::randn({out, in}).to(dtype));
          step_biases.push_back(torch::randn({out}).to(dtype));
          step_inputs.push_back(input(i, dtype));
          step_bytes += weight_bytes(out, in, dtype);
        }
      }
      const double step_ms = tfm::bench::best_ms(200, [&] {
        for (size_t i = 0; i < step.size(); ++i) step[i].linear(step_inputs[i], step_biases[i]);
      });
      std::printf("  a step of %lld layers: %8.2f us %7.1f GB/s (%.1f MB)\n", static_cast<long long>(layers),
                  step_ms * 1000, step_bytes / (step_ms * 1e6), step_bytes / 1e6);
      // The bound a step's products approach: a plain read of as many bytes, from as far as the
      // step's weights once they outgrow L3 (eight sums a thread, two loads a cycle outrun memory).
      const auto plain = torch::ones({static_cast<int64_t>(step_bytes / 8)}, torch::kLong);
      const int64_t* words = plain.data_ptr<int64_t>();
      std::vector<int64_t> sums(64 * threads);  // a cache line apart
      const double read_ms = tfm::bench::best_ms(50, [&] {
        at::parallel_for(0, plain.numel() / 8, 4096, [&](int64_t begin, int64_t end) {
          int64_t s[8] = {};
          for (int64_t i = begin; i < end; ++i) {
            for (int j = 0; j < 8; ++j) s[j] += words[8 * i + j];
          }
          sums[64 * at::get_thread_num()] += s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
        });
      });
      std::printf("  a plain read of as many bytes: %8.2f us %7.1f GB/s\n", read_ms * 1000,
                  step_bytes / (read_ms * 1e6));
      // Each shape from memory: copies of its weight, enough to outgrow L3, called in turn, so
      // that a shape's read rate shows where a step's falls short of the plain read's.
      constexpr double kBeyondCache = 96e6;  // bytes
      for (size_t i = 0; i < shapes.size(); ++i) {
        const auto [out, in] = shapes[i];
        const double bytes = weight_bytes(out, in, dtype);
        std::vector<tfm::PackedWeight> copies;
        for (double held = 0; held < kBeyondCache; held += bytes)
          copies.emplace_back(torch::randn({out, in}).to(dtype));
        const auto bias = torch::randn({out}).to(dtype);
        const auto x = input(i, dtype);
        const auto every_copy = [&] {
          for (const auto& copy : copies) copy.linear(x, bias);
        };
        const double ms = tfm::bench::best_ms(5, every_copy) / static_cast<double>(copies.size());
        std::printf("  %-11s [%5lld x %5lld] from memory %8.2f us %7.1f GB/s\n", names[i], static_cast<long long>(out),
                    static_cast<long long>(in), ms * 1000, bytes / (ms * 1e6));
      }
      for (size_t i = 0; i < shapes.size(); ++i) {
        const auto [out, in] = shapes[i];
        const tfm::PackedWeight weight(torch::randn({out, in}).to(dtype));
        const auto bias = torch::randn({out}).to(dtype);
        const auto x = input(i, dtype);
        const double ms = tfm::bench::best_ms(2000, [&] { weight.linear(x, bias); });
        const double bytes = weight_bytes(out, in, dtype);
        std::printf("  %-11s [%5lld x %5lld] %8.2f us %7.1f GB/s\n", names[i], static_cast<long long>(out),
                    static_cast<long long>(in), ms * 1000, bytes / (ms * 1e6));
      }
    }
  }
  return 0;
}
