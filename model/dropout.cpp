#include "model/dropout.h"

#include <cstdint>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <torch/torch.h>

#include "runtime/kernels.h"

namespace tfm {
namespace {

/// Elements per Philox subsequence: a block is the unit of parallel work, so the mask is the same
/// whichever thread fills which block.
constexpr int64_t kBlock = 4096;

uint64_t next_seed() {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

/// noise[i] = 0 with probability p, else 1 / (1 - p), in noise's dtype.
void fill_noise(torch::Tensor& noise, double p) {
  const uint64_t seed = next_seed();
  // Each 32-bit draw decides two elements, 16 bits each: drop where the half falls below
  // p * 2^16 (p to within 2^-17, and half the generator's work of one draw per element).
  const auto threshold = static_cast<uint32_t>(p * 65536.0 + 0.5);
  const int64_t n = noise.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, noise.scalar_type(), "tfm_dropout", [&] {
    auto* out = noise.data_ptr<scalar_t>();
    const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
    const auto zero = static_cast<scalar_t>(0);
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        at::philox_engine engine(seed, static_cast<uint64_t>(block), 0);
        const int64_t last = std::min(n, (block + 1) * kBlock);
        for (int64_t i = block * kBlock; i < last; i += 2) {
          const uint32_t draw = engine();
          out[i] = (draw & 0xFFFFU) >= threshold ? scale : zero;
          if (i + 1 < last) out[i + 1] = (draw >> 16) >= threshold ? scale : zero;
        }
      }
    });
  });
}

}  // namespace

torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  if (!fused_kernels() || !x.is_cpu() || p >= 1.0) return torch::dropout(x, p, training);
  auto noise = torch::empty(x.sizes(), x.options().requires_grad(false));
  {
    torch::NoGradGuard no_grad;
    fill_noise(noise, p);
  }
  return x * noise;
}

}  // namespace tfm
