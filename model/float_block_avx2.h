#pragma once
#include <cstdint>

namespace tfm {

/// SmallRowsProduct's float32 products on CPUs with AVX2 and no AVX-512.
///
/// The layout's 64-output block is [in', 64]: each input's slice is 256 bytes, four cache lines.
/// AVX2's 16 registers hold 8 sums per row at 4 rows, so LIBXSMM reads a block in four 16-output
/// strips, one line of every slice per strip. The CPU's prefetchers follow that stride poorly: a
/// warm [8000 x 256] product at 4 rows streamed ~24 GB/s where a plain read streams ~45
/// (BENCHMARKS.md). This kernel reads the same strips, but while it works on one block it asks for
/// the next block's lines, one or more per input step, so the strips read lines already at hand
/// (the first block a thread reads, which nothing asked for, asks for its own).
///
/// Each output sums its inputs in ascending order with one fused multiply-add each, from zero, as
/// LIBXSMM's kernels do: the same bits (tests/model/float_block_avx2_test.cpp).

/// Rows up to which the kernel is taken: from 8 rows on a product is bound by its multiply-adds
/// more than by its bytes, and LIBXSMM's kernels are as fast or faster (BENCHMARKS.md).
constexpr int64_t kFloatBlockMaxRows = 4;

/// Whether this CPU takes the kernel: AVX2 and FMA without AVX-512 (whose 32 registers let
/// LIBXSMM read each slice whole).
bool float_block_avx2_kernels();

/// acc [rows, 64] (rows 64 apart) = x [rows, in] (rows `in` apart) times `block`, one 64-output
/// block of SmallRowsProduct's float32 layout ([in, 64]), summed over the `count` inputs listed
/// ascending in `live` (the others zero in every row: model/live_inputs_product.h), or over all
/// `in` where `live` is nullptr. `next`: the block read after this one, whose same inputs' slices
/// are asked for ahead, or nullptr. `first`: whether this is the first block the calling thread
/// reads in this product (no previous call asked for it), so that it asks for its own slices.
/// 1 <= rows <= kFloatBlockMaxRows. Needs float_block_avx2_kernels().
void multiply_float_block(const float* block, const float* next, bool first, const float* x, int64_t rows, int64_t in,
                          const int32_t* live, int64_t count, float* acc);

}  // namespace tfm
