#pragma once
#include <memory>

#include <torch/types.h>

namespace tfm {

/// rows [out, in] float32 quantized to int8 by `scales` [out] float32, zero points 0, as LibTorch's
/// per-channel quantization (quantize_per_channel to qint8, through FBGEMM's Quantize) gives
/// them: w * (1 / scale) in float32, rounded half to even, clamped to [-128, 127]. LibTorch takes
/// each element through a scalar call; this takes a block of rows at a time through vectorized
/// ops (BENCHMARKS.md, session 70's start-up section). -> [out, in] int8
torch::Tensor quantize_rows_int8(const torch::Tensor& rows, const torch::Tensor& scales);

/// A linear layer's weight quantized once to int8 for CPU inference, one scale per output row,
/// and packed for FBGEMM's int8 product. linear() quantizes its input per call (7-bit range, which
/// AVX2's int8 multiply-add cannot overflow), accumulates in int32 and returns float32: the
/// arithmetic of LibTorch's quantized::linear_dynamic (a test holds them bit-equal), with FBGEMM's
/// int32 accumulator sized for a block of rows rather than the whole output. Rows of W differ in
/// range, and per-row scales keep small rows exact. Copies share the packed weight.
class Int8Weight {
 public:
  Int8Weight() = default;
  /// weight: [out, in] float32 on the CPU (else std::invalid_argument); bias: [out] or undefined.
  Int8Weight(const torch::Tensor& weight, const torch::Tensor& bias);

  bool defined() const { return packed_ != nullptr; }
  /// x: [..., in] float32 -> x W^T + b, [..., out] float32; with `relu`, max(0, x W^T + b), taken
  /// as each row is dequantized (FBGEMM's fused ReLU) rather than in a pass of its own.
  torch::Tensor linear(const torch::Tensor& x, bool relu = false) const;

 private:
  struct Packed;
  std::shared_ptr<const Packed> packed_;
};

}  // namespace tfm
