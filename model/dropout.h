#pragma once
#include <cstdint>

#include <ATen/core/Generator.h>
#include <torch/types.h>

namespace tfm {

/// Inverted dropout (§5.4): while training, each element is zeroed with probability p and the
/// rest scaled by 1 / (1 - p); otherwise x itself. Differentiable in x.
///
/// On the CPU the keep/drop mask comes from a counter-based generator (LibTorch's Philox engine),
/// one stream per block of elements, filled in parallel: LibTorch's own bernoulli_ draws from one
/// Mersenne twister on one thread on CPUs other than Intel's, which took ~11% of a bf16 training
/// step on two cores. The seed is drawn from LibTorch's default CPU generator, so manual_seed and
/// its saved state still make runs repeatable, and the mask does not depend on the thread count.
/// With --plain-kernels, and on CUDA, this is torch::dropout (LibTorch's random stream).
torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training);

/// The factors apply_dropout() multiplies a CPU tensor like `like` by under fused kernels: 0 with
/// probability p, else 1 / (1 - p), in like's shape and dtype, from the same random stream. For
/// kernels that apply dropout inside a fused pass. 0 <= p < 1.
torch::Tensor dropout_noise(const torch::Tensor& like, double p);

/// While one is alive, the fused dropout masks drawn on its thread take their seeds from a stream
/// of their own, started from `seed`, instead of LibTorch's default generator. Threads that
/// compute parts of one batch side by side then draw the same masks however their draws
/// interleave in time. Scopes on one thread nest; each must end on the thread that began it.
class DropoutSeedScope {
 public:
  explicit DropoutSeedScope(uint64_t seed);
  ~DropoutSeedScope();
  DropoutSeedScope(const DropoutSeedScope&) = delete;
  DropoutSeedScope& operator=(const DropoutSeedScope&) = delete;

 private:
  DropoutSeedScope* outer_;
  at::Generator generator_;
  friend uint64_t next_dropout_seed();
};

/// The seed of the next fused dropout mask on this thread: from the innermost DropoutSeedScope,
/// else from LibTorch's default CPU generator.
uint64_t next_dropout_seed();

}  // namespace tfm
