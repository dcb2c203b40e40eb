#pragma once
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace tfm {

/// SmallRowsProduct's bfloat16 products of a few rows on CPUs with AMX tiles
/// (runtime/capabilities.h: cpu_has_bf16_tiles).
///
/// LIBXSMM's AVX512-BF16 kernels take one dot-product instruction per row for each 64-byte line of
/// the weight: at a beam's 4 rows a warm [512 x 512] product runs at a third of the core's dot
/// product rate, and a step's products stream their weights from memory at half the rate a plain
/// read does (bench/small_rows.sh, BENCHMARKS.md). One AMX tile multiply takes [rows, 32] inputs by a
/// [32, 16] weight tile. The layout's 64-output block ([in'/2, 64, 2]) is already the tiles'
/// pair-interleaved form: a weight tile is 16 pairs of inputs, 64 bytes each, 256 bytes apart, and a
/// block's four tiles at the same inputs read 4 KiB in a row. oneDNN's own tile kernels pad the rows
/// to 16 and build a primitive per call, which cost more than LIBXSMM at 4 rows (session 80).
///
/// Each output is a float32 sum of its inputs' products from zero, in the tile unit's order: the
/// values of LIBXSMM's kernels up to the order of the sums and the tiles' flushing of float32
/// subnormals to zero.

/// Rows of one tile: products of more rows are multiplied 16 rows at a time.
constexpr int64_t kTileRows = 16;

/// Whether this CPU and build take the kernel: AMX-BF16 that Linux lets this process use.
bool bf16_block_amx_kernels();

/// This thread's tiles set for groups of `rows` rows (1 to kTileRows) while it lives, and released
/// after it: oneDNN's tile kernels set their own each time they run.
class Bf16Tiles {
 public:
  explicit Bf16Tiles(int64_t rows);
  ~Bf16Tiles();
  Bf16Tiles(const Bf16Tiles&) = delete;
  Bf16Tiles& operator=(const Bf16Tiles&) = delete;
};

/// acc [groups x group_rows, 64] (rows 64 apart) = x [groups x group_rows, in] (rows `in` apart)
/// times `block`, one 64-output block of SmallRowsProduct's bfloat16 layout ([in / 2, 64, 2]); `in`
/// a multiple of 32, `group_rows` those of the Bf16Tiles this thread holds.
void multiply_bf16_block_amx(const c10::BFloat16* block, const c10::BFloat16* x, int64_t in, int64_t groups,
                             int64_t group_rows, float* acc);

}  // namespace tfm
