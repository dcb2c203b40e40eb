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

/// A [out, in] float32 matrix quantized row by row, zero points 0: row i is about scales[i] x
/// values[i]. What FBGEMM's int8 products read (Int8Weight), and, for a tied output matrix, what a
/// shortlist's int8 products and the token embeddings read too, so that one quantization serves all.
struct Int8Rows {
  torch::Tensor values;  // [out, in] int8 within [-127, 127]: round(row / scale) (quantize_rows_int8)
  torch::Tensor scales;  // [out] float32: max |row| / 127 (at least 1e-12)
  torch::Tensor sums;    // [out] int32: each row's sum of values

  bool defined() const { return values.defined(); }
};

/// rows: [out, in] float32 on the CPU -> its Int8Rows, as LibTorch's per-channel quantization gives
/// them for scales of max |row| / 127.
Int8Rows quantize_int8_rows(const torch::Tensor& rows);

/// values: [out, in] int8 (contiguous, CPU), scales: [out] float32 -> their Int8Rows, each row's
/// sum computed here.
Int8Rows int8_rows_from(const torch::Tensor& values, const torch::Tensor& scales);

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
  /// With `keep_rows`, rows() keeps the quantized weight row by row beside FBGEMM's packing (1 byte
  /// an element more); without, they are freed once packed.
  Int8Weight(const torch::Tensor& weight, const torch::Tensor& bias, bool keep_rows = false);
  /// The same from a weight already quantized (quantize_int8_rows; an int8 model file's): values
  /// [out, in] int8, scales [out] float32, sums [out] int32 on the CPU, else std::invalid_argument.
  Int8Weight(const Int8Rows& rows, const torch::Tensor& bias, bool keep_rows = false);

  bool defined() const { return packed_ != nullptr; }
  /// x: [..., in] float32 -> x W^T + b, [..., out] float32; with `relu`, max(0, x W^T + b), taken
  /// as each row is dequantized (FBGEMM's fused ReLU) rather than in a pass of its own.
  torch::Tensor linear(const torch::Tensor& x, bool relu = false) const;
  /// The quantized weight row by row, if kept (constructed with `keep_rows`); else undefined.
  const Int8Rows& rows() const;

 private:
  struct Packed;
  std::shared_ptr<const Packed> packed_;
};

}  // namespace tfm
