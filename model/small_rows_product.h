#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// x W^T (+ b, ReLU) for the few rows of a decoding step, with a float32 or bfloat16 weight,
/// through LIBXSMM's JIT kernels (Debian's libxsmm-dev). At 4-32 rows oneDNN spends ~15 us a call
/// building its primitive descriptor around a product of a few microseconds (a 4 x 256 x 256
/// product: 17.8 us against LIBXSMM's 2.3; BENCHMARKS.md), while at hundreds of rows its kernels
/// are twice as fast: PackedWeight uses this up to kMaxRows rows (of 32, 48 and 64, 64 decoded
/// small batches fastest; BENCHMARKS.md). Accumulates in float32, adds the bias and applies the
/// ReLU in float32, and rounds once, as oneDNN does; only the order of the sums differs (oneDNN
/// splits long sums). Inference only, in builds with LIBXSMM (found by CMake): bfloat16 on CPUs
/// with native bfloat16 (AVX512-BF16), float32 on CPUs with AVX2.
class SmallRowsProduct {
 public:
  static constexpr int64_t kMaxRows = 64;

  /// Whether the CPU and `weight` ([out, in] float32, or bfloat16 with in even) allow it.
  static bool supported(const torch::Tensor& weight);
  /// weight: [out, in]; copied once into the layout LIBXSMM's kernels read.
  explicit SmallRowsProduct(const torch::Tensor& weight);
  SmallRowsProduct(const SmallRowsProduct&) = delete;
  SmallRowsProduct& operator=(const SmallRowsProduct&) = delete;

  /// x: [M, in] contiguous in the weight's dtype, 1 <= M <= kMaxRows; bias: [out] in that dtype or
  /// undefined -> [M, out] in that dtype.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& bias, bool relu) const;

 private:
  using Kernel = void*;  // a libxsmm_smmfunction (float32) or libxsmm_bsmmfunction (bfloat16)
  /// The kernel for `rows` rows and a block of `width` outputs (kBlock, or the last block's).
  Kernel kernel(int64_t rows, int64_t width) const;
  template <typename T>
  void lay_out_blocks(const T* from, T* to, int64_t pair) const;
  /// result [rows, out] = relu?(input [rows, in] W^T + bias), block by block on LibTorch's threads.
  template <typename T>
  void multiply(const T* input, const T* bias, bool relu, int64_t rows, T* result) const;

  static constexpr int64_t kBlock = 64;  // outputs per kernel call
  // Blocks of kBlock outputs (the last one narrower): float32 [in, width]; bfloat16
  // [in/2, width, 2], pairs of inputs side by side.
  torch::Tensor weight_;
  int64_t out_ = 0, in_ = 0;
  torch::ScalarType dtype_;
  mutable std::array<std::atomic<Kernel>, kMaxRows + 1> full_{}, last_{};
};

}  // namespace tfm
