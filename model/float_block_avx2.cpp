#include "model/float_block_avx2.h"

#include <c10/util/Exception.h>

#include "runtime/vector_clones.h"

#ifdef TFM_EXTENSION_KERNELS
#include <immintrin.h>
#endif

namespace tfm {
namespace {

constexpr int64_t kBlock = 64;  // SmallRowsProduct's outputs per block
constexpr int64_t kLine = 64;   // bytes

#ifdef TFM_EXTENSION_KERNELS

/// acc [Rows, 64] = x [Rows, in] times the block over the `count` inputs listed in `live` (Listed)
/// or inputs [0, count), in strips of 8 * Vectors outputs (Rows * Vectors sums in registers). Over
/// the strips' input steps the next block's slices of the same inputs are asked for line by line,
/// in order: the order of memory (strided requests, a line of each slice per strip, ran slower).
/// A block nothing asked for (`first`) asks for each input's whole slice as its first strip reads
/// the slice's first line, so that the later strips find it; asking further ahead ran slower
/// (BENCHMARKS.md).
template <int Rows, int Vectors, bool Listed>
TFM_AVX2_TARGET void multiply_strips(const float* block, const char* next, bool first, const float* x, int64_t in,
                                     const int32_t* live, int64_t count, float* acc) {
  constexpr int64_t kStrip = 8 * Vectors;
  constexpr int64_t kSlice = kBlock * static_cast<int64_t>(sizeof(float));  // bytes of one input's slice
  constexpr int64_t kLinesPerSlice = kSlice / kLine;
  constexpr int64_t kLinesPerStep = kLinesPerSlice / (kBlock / kStrip);
  const char* own = reinterpret_cast<const char*>(block);
  for (int64_t strip = 0; strip < kBlock; strip += kStrip) {
    __m256 sums[Rows * Vectors];
#pragma GCC unroll 8
    for (int i = 0; i < Rows * Vectors; ++i) sums[i] = _mm256_setzero_ps();
    const float* column = block + strip;
    const int64_t first_line = strip / kStrip * count * kLinesPerStep;  // of the next block's count * 4
    for (int64_t i = 0; i < count; ++i) {
      const int64_t k = Listed ? live[i] : i;
      if (first && strip == 0) {
#pragma GCC unroll 4
        for (int64_t line = 0; line < kLinesPerSlice; ++line)
          _mm_prefetch(own + k * kSlice + line * kLine, _MM_HINT_T0);
      }
      if (next != nullptr) {
#pragma GCC unroll 4
        for (int64_t step_line = 0; step_line < kLinesPerStep; ++step_line) {
          const int64_t line = first_line + i * kLinesPerStep + step_line;
          _mm_prefetch(Listed ? next + live[line / kLinesPerSlice] * kSlice + line % kLinesPerSlice * kLine
                              : next + line * kLine,
                       _MM_HINT_T1);
        }
      }
      __m256 weights[Vectors];
#pragma GCC unroll 8
      for (int v = 0; v < Vectors; ++v) weights[v] = _mm256_loadu_ps(column + k * kBlock + 8 * v);
#pragma GCC unroll 4
      for (int r = 0; r < Rows; ++r) {
        const __m256 input = _mm256_broadcast_ss(x + r * in + k);
#pragma GCC unroll 8
        for (int v = 0; v < Vectors; ++v) {
          sums[r * Vectors + v] = _mm256_fmadd_ps(input, weights[v], sums[r * Vectors + v]);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
      for (int v = 0; v < Vectors; ++v) _mm256_storeu_ps(acc + r * kBlock + strip + 8 * v, sums[r * Vectors + v]);
    }
  }
}

/// multiply_strips for `rows` rows: 8 sums a row in registers, so a row alone takes the whole
/// block in one strip.
template <bool Listed>
void multiply_rows(const float* block, const char* next, bool first, const float* x, int64_t rows, int64_t in,
                   const int32_t* live, int64_t count, float* acc) {
  switch (rows) {
    case 1: multiply_strips<1, 8, Listed>(block, next, first, x, in, live, count, acc); break;
    case 2: multiply_strips<2, 4, Listed>(block, next, first, x, in, live, count, acc); break;
    case 3: multiply_strips<3, 2, Listed>(block, next, first, x, in, live, count, acc); break;
    default: multiply_strips<4, 2, Listed>(block, next, first, x, in, live, count, acc); break;
  }
}

#endif

}  // namespace

bool float_block_avx2_kernels() {
#ifdef TFM_EXTENSION_KERNELS
  static const bool avx2_alone =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !__builtin_cpu_supports("avx512f");
  return avx2_alone;
#else
  return false;
#endif
}

void multiply_float_block(const float* block, const float* next, bool first, const float* x, int64_t rows, int64_t in,
                          const int32_t* live, int64_t count, float* acc) {
  TORCH_CHECK(float_block_avx2_kernels() && rows >= 1 && rows <= kFloatBlockMaxRows && count >= 0 && count <= in,
              "multiply_float_block: AVX2 without AVX-512, 1 to ", kFloatBlockMaxRows,
              " rows and at most `in` inputs are needed");
#ifdef TFM_EXTENSION_KERNELS
  const char* ahead = reinterpret_cast<const char*>(next);
  if (live != nullptr) {
    multiply_rows<true>(block, ahead, first, x, rows, in, live, count, acc);
  } else {
    multiply_rows<false>(block, ahead, first, x, rows, in, nullptr, in, acc);
  }
#endif
}

}  // namespace tfm
