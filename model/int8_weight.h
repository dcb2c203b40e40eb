#pragma once
#include <ATen/core/ivalue.h>
#include <torch/types.h>

namespace tfm {

/// A linear layer's weight quantized once to int8 for CPU inference, one scale per output row,
/// and packed for FBGEMM (LibTorch's quantized::linear_prepack). linear() quantizes its input per
/// call (7-bit range, which AVX2's int8 multiply-add cannot overflow), accumulates in int32 and
/// returns float32 (quantized::linear_dynamic). Rows of W differ in range, and per-row scales keep
/// small rows exact.
class Int8Weight {
 public:
  Int8Weight() = default;
  /// weight: [out, in] float32 on the CPU (else std::invalid_argument); bias: [out] or undefined.
  Int8Weight(const torch::Tensor& weight, const torch::Tensor& bias);

  bool defined() const { return !packed_.isNone(); }
  /// x: [..., in] float32 -> x W^T + b, [..., out] float32
  torch::Tensor linear(const torch::Tensor& x) const;

 private:
  c10::IValue packed_;  // FBGEMM's packed int8 weight and bias
};

}  // namespace tfm
