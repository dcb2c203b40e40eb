#include "model/float_block_avx2.h"

#include <algorithm>

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

/// acc [Rows, 64] = x [Rows, in] times the block, in strips of 8 * Vectors outputs (Rows * Vectors
/// sums in registers). While it does, the next block's in * 4 lines are asked for, spread evenly
/// over the strips' input steps.
template <int Rows, int Vectors>
TFM_AVX2_TARGET void multiply_strips(const float* block, const char* next, const float* x, int64_t in, float* acc) {
  constexpr int64_t kStrip = 8 * Vectors;
  constexpr int64_t kLinesPerStep = kBlock * sizeof(float) / kLine / (kBlock / kStrip);
  for (int64_t strip = 0; strip < kBlock; strip += kStrip) {
    __m256 sums[Rows * Vectors];
#pragma GCC unroll 8
    for (int i = 0; i < Rows * Vectors; ++i) sums[i] = _mm256_setzero_ps();
    const float* column = block + strip;
    const char* ahead = next != nullptr ? next + (strip / kStrip) * in * kLinesPerStep * kLine : nullptr;
    for (int64_t k = 0; k < in; ++k) {
      if (ahead != nullptr) {
#pragma GCC unroll 4
        for (int64_t line = 0; line < kLinesPerStep; ++line) {
          _mm_prefetch(ahead + (k * kLinesPerStep + line) * kLine, _MM_HINT_T1);
        }
      }
      __m256 weights[Vectors];
#pragma GCC unroll 8
      for (int v = 0; v < Vectors; ++v) weights[v] = _mm256_loadu_ps(column + k * kBlock + 8 * v);
#pragma GCC unroll 4
      for (int r = 0; r < Rows; ++r) {
        const __m256 input = _mm256_broadcast_ss(x + r * in + k);
#pragma GCC unroll 8
        for (int v = 0; v < Vectors; ++v)
          sums[r * Vectors + v] = _mm256_fmadd_ps(input, weights[v], sums[r * Vectors + v]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
      for (int v = 0; v < Vectors; ++v) _mm256_storeu_ps(acc + r * kBlock + strip + 8 * v, sums[r * Vectors + v]);
    }
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

void multiply_float_block(const float* block, const float* next, const float* x, int64_t rows, int64_t in, float* acc) {
  TORCH_CHECK(float_block_avx2_kernels() && rows >= 1 && rows <= kFloatBlockMaxRows && in >= 1,
              "multiply_float_block: AVX2 without AVX-512, 1 to ", kFloatBlockMaxRows, " rows and an input are needed");
#ifdef TFM_EXTENSION_KERNELS
  // 8 sums a row in registers: a row alone takes the whole block in one strip.
  const char* ahead = reinterpret_cast<const char*>(next);
  switch (rows) {
    case 1: multiply_strips<1, 8>(block, ahead, x, in, acc); break;
    case 2: multiply_strips<2, 4>(block, ahead, x, in, acc); break;
    case 3: multiply_strips<3, 2>(block, ahead, x, in, acc); break;
    default: multiply_strips<4, 2>(block, ahead, x, in, acc); break;
  }
#endif
}

}  // namespace tfm
