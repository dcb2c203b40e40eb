// A bf16 training step's linear layers on one thread, as each sub-batch runs them: milliseconds
// for the forward and the backward of autocast's torch::linear against bf16_training_linear,
// and for the backward's gradient layout (pad_and_transpose_gradient) beside a plain copy of as
// many bytes. Only for bench/training_linear.sh.
//   tfm-training-linear-bench [ROWS] [D_MODEL] [D_FF] [VOCABULARY]
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "best_ms.h"  // beside this file
#include "model/bf16_training_linear.h"
#include "model/bucketed_rows.h"
#include "model/gradient_transpose.h"
#include "runtime/allocator.h"
#include "runtime/precision.h"

// jemalloc (linked as in tfm) with tfm's options: the layers' buffers are reused as in training.
extern "C" {
const char* malloc_conf = tfm::kJemallocOptions;
}

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2000;
  const int64_t d = argc > 2 ? std::atoll(argv[2]) : 256;
  const int64_t ff = argc > 3 ? std::atoll(argv[3]) : 1024;
  const int64_t vocabulary = argc > 4 ? std::atoll(argv[4]) : 8000;
  at::set_num_threads(1);
  // [out, in] of an encoder layer's products and the output layer's (no bias).
  const std::vector<std::pair<int64_t, int64_t>> shapes{{3 * d, d}, {d, d}, {ff, d}, {d, ff}, {vocabulary, d}};
  const char* names[] = {"q,k,v", "out", "ffn in", "ffn out", "output"};
  std::printf("%lld rows, 1 thread; ms per call\n", static_cast<long long>(rows));
  std::printf("%-8s %9s %9s %9s %9s %9s %9s %9s\n", "layer", "fwd ATen", "fwd ours", "bwd ATen", "bwd ours", "total x",
              "layout", "copy");
  for (size_t s = 0; s < shapes.size(); ++s) {
    const auto [out, in] = shapes[s];
    const bool has_bias = s + 1 < shapes.size();
    const auto x = torch::randn({rows, in}).requires_grad_(true);
    const auto weight = (torch::randn({out, in}) * 0.05).requires_grad_(true);
    const auto bias = has_bias ? torch::randn({out}).requires_grad_(true) : torch::Tensor();
    const auto g = torch::randn({rows, out}).to(torch::kBFloat16);
    double ms[2][2];
    for (int ours = 0; ours < 2; ++ours) {
      auto forward = [&] {
        const tfm::AutocastGuard bfloat16(torch::kCPU, tfm::Precision::kBFloat16);
        return ours ? tfm::bf16_training_linear(x, weight, bias) : torch::linear(x, weight, bias);
      };
      ms[ours][0] = tfm::bench::best_ms(5, [&] { forward(); });
      ms[ours][1] = tfm::bench::best_ms(5,
                                        [&] {
                                          forward().backward(g);
                                          x.mutable_grad().reset();
                                          weight.mutable_grad().reset();
                                          if (has_bias) bias.mutable_grad().reset();
                                        }) -
                    ms[ours][0];
    }
    const int64_t padded = tfm::bucketed_row_count(rows);  // as the layer pads them
    const double layout = tfm::bench::best_ms(5, [&] { tfm::pad_and_transpose_gradient(g, padded, has_bias); });
    const double copy = tfm::bench::best_ms(5, [&] { g.clone(); });
    std::printf("%-8s %9.3f %9.3f %9.3f %9.3f %9.2f %9.3f %9.3f\n", names[s], ms[0][0], ms[1][0], ms[0][1], ms[1][1],
                (ms[0][0] + ms[0][1]) / (ms[1][0] + ms[1][1]), layout, copy);
  }
}
