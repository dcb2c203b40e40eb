#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// An output gradient laid out for a linear layer's two backward products under bf16 training.
struct PaddedGradient {
  torch::Tensor rows;         // [padded, out] bf16: the gradient, then zero rows (the input gradient's product)
  torch::Tensor transposed;   // [out, padded] bf16: rows^T (the weight gradient's product), rows an odd number of
                              // 64-byte lines apart
  torch::Tensor column_sums;  // [out] float32: the sum of the gradient's rows (the bias gradient), if asked
};

/// One pass over a bfloat16 gradient g [rows, out] (contiguous) that writes what a linear layer's
/// backward reads: g padded with zero rows to `padded` rows (g itself when nothing is added),
/// its transpose, and with `column_sums` its column sums in float32.
///
/// Why the transpose: oneDNN multiplies a transposed left operand (g^T x for the weight gradient)
/// at about half its rate on this CPU (BENCHMARKS.md), and ATen's transposing copy of bfloat16
/// is slower still; here 32 x 32 blocks are transposed in AVX-512 registers (a plain loop
/// elsewhere). The column sums come from the same reads, instead of ATen's sum over dim 0.
PaddedGradient pad_and_transpose_gradient(const torch::Tensor& g, int64_t padded, bool column_sums);

}  // namespace tfm
