#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// x W^T (+ b, ReLU) for the few rows of a decoding step, with a bfloat16 weight, through
/// LIBXSMM's JIT kernels (Debian's libxsmm-dev). At 4-32 rows oneDNN spends ~15 us a call building
/// its primitive descriptor around a product of a few microseconds (a 4 x 256 x 256 product: 17.8
/// us against LIBXSMM's 2.3; BENCHMARKS.md), while at hundreds of rows its kernels are twice as
/// fast: PackedWeight uses this up to kMaxRows rows (of 32, 48 and 64, 64 decoded small batches
/// fastest; BENCHMARKS.md). Accumulates in float32, adds the bias and applies the ReLU in
/// float32, and rounds once to bfloat16, as oneDNN does; only the order of the sums differs. Only on CPUs with native
/// bfloat16 (AVX512-BF16), in builds with LIBXSMM (found by CMake); inference only.
class SmallRowsProduct {
 public:
  static constexpr int64_t kMaxRows = 64;

  /// Whether the CPU and `weight` ([out, in] bfloat16, in even) allow it.
  static bool supported(const torch::Tensor& weight);
  /// weight: [out, in]; copied once into the layout LIBXSMM's bfloat16 kernels read.
  explicit SmallRowsProduct(const torch::Tensor& weight);
  SmallRowsProduct(const SmallRowsProduct&) = delete;
  SmallRowsProduct& operator=(const SmallRowsProduct&) = delete;

  /// x: [M, in] bfloat16 contiguous, 1 <= M <= kMaxRows; bias: [out] bfloat16 or undefined ->
  /// [M, out] bfloat16.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& bias, bool relu) const;

 private:
  using Kernel = void*;  // a libxsmm_bsmmfunction
  /// The kernel for `rows` rows and a block of `width` outputs (kBlock, or the last block's).
  Kernel kernel(int64_t rows, int64_t width) const;

  static constexpr int64_t kBlock = 64;  // outputs per kernel call
  // Blocks of kBlock outputs (the last one narrower), each [in/2, width, 2]: pairs of inputs side by side.
  torch::Tensor weight_;
  int64_t out_ = 0, in_ = 0;
  mutable std::array<std::atomic<Kernel>, kMaxRows + 1> full_{}, last_{};
};

}  // namespace tfm
