#include "model/live_inputs_product.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <c10/util/Exception.h>

#include "runtime/vector_clones.h"

#ifdef TFM_EXTENSION_KERNELS
#include <immintrin.h>
#define TFM_FLOAT_TARGET __attribute__((target("arch=x86-64-v4")))
#endif

namespace tfm {
namespace {

constexpr int64_t kBlock = 64;  // SmallRowsProduct's outputs per block
/// Live inputs ahead whose weight slices are asked for: the skipped ones leave gaps in the block
/// that the CPU's own prefetchers stop at.
constexpr int64_t kPrefetchAhead = 32;

/// Words [first, count) of x (rows `stride` words apart) that are not zero under `magnitude` in
/// some row, appended to live: a word at a time, on any CPU.
void append_live_words_portably(const uint32_t* x, int64_t rows, int64_t stride, int64_t first, int64_t count,
                                uint32_t magnitude, std::vector<int32_t>& live) {
  for (int64_t k = first; k < count; ++k) {
    uint32_t any = 0;
    for (int64_t r = 0; r < rows; ++r) any |= x[r * stride + k];
    if ((any & magnitude) != 0) live.push_back(static_cast<int32_t>(k));
  }
}

#ifdef TFM_EXTENSION_KERNELS

/// The indices of the 16 words at `words` (rows `stride` words apart) that are not zero, under
/// `magnitude` (the sign bits cleared: -0 is zero), in some row -> appended to live as first + i.
TFM_FLOAT_TARGET void append_live_words(const uint32_t* words, int64_t rows, int64_t stride, int32_t first,
                                        uint32_t magnitude, std::vector<int32_t>& live) {
  __m512i any = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) any = _mm512_or_si512(any, _mm512_loadu_si512(words + r * stride));
  for (__mmask16 mask = _mm512_test_epi32_mask(any, _mm512_set1_epi32(static_cast<int>(magnitude))); mask != 0;
       mask &= static_cast<__mmask16>(mask - 1)) {
    live.push_back(first + __builtin_ctz(mask));
  }
}

/// Words [0, count) of x (rows `stride` words apart) that are not zero under `magnitude` in some row.
TFM_FLOAT_TARGET void find_live_words(const uint32_t* x, int64_t rows, int64_t stride, int64_t count,
                                      uint32_t magnitude, std::vector<int32_t>& live) {
  live.clear();
  int64_t first = 0;
  for (; first + 16 <= count; first += 16) {
    append_live_words(x + first, rows, stride, static_cast<int32_t>(first), magnitude, live);
  }
  append_live_words_portably(x, rows, stride, first, count, magnitude, live);
}

/// Words [0, count) of x (rows `count` words apart) not zero under `magnitude` in some row, 8 at a
/// time: the AVX2 CPUs' finder (model/float_block_avx2.h).
TFM_AVX2_TARGET void find_live_words_avx2(const uint32_t* x, int64_t rows, int64_t count, uint32_t magnitude,
                                          std::vector<int32_t>& live) {
  live.clear();
  const __m256i bits = _mm256_set1_epi32(static_cast<int>(magnitude));
  int64_t first = 0;
  for (; first + 8 <= count; first += 8) {
    __m256i any = _mm256_setzero_si256();
    for (int64_t r = 0; r < rows; ++r) {
      any = _mm256_or_si256(any, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + r * count + first)));
    }
    const __m256i zero = _mm256_cmpeq_epi32(_mm256_and_si256(any, bits), _mm256_setzero_si256());
    for (auto mask = static_cast<unsigned>(~_mm256_movemask_ps(_mm256_castsi256_ps(zero))) & 0xffU; mask != 0;
         mask &= mask - 1) {
      live.push_back(static_cast<int32_t>(first + __builtin_ctz(mask)));
    }
  }
  append_live_words_portably(x, rows, count, first, count, magnitude, live);
}

/// Asks for the 256 bytes (a live input's slice of a block) at `slice`.
TFM_FLOAT_TARGET inline void prefetch_slice(const void* slice) {
  const char* bytes = static_cast<const char*>(slice);
  for (int line = 0; line < 4; ++line) _mm_prefetch(bytes + 64 * line, _MM_HINT_T0);
}

/// acc rows [0, N) of a block over the live inputs: float32, one fused multiply-add per input.
template <int N>
TFM_FLOAT_TARGET void float_rows(const float* block, const float* x, int64_t in, const int32_t* live, int64_t count,
                                 float* acc) {
  __m512 sums[N][4];
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < 4; ++j) sums[r][j] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) prefetch_slice(block + live[i + kPrefetchAhead] * kBlock);
    const int64_t k = live[i];
    const float* slice = block + k * kBlock;
    __m512 weights[4];
    for (int j = 0; j < 4; ++j) weights[j] = _mm512_loadu_ps(slice + 16 * j);
    for (int r = 0; r < N; ++r) {
      const __m512 input = _mm512_set1_ps(x[r * in + k]);
      for (int j = 0; j < 4; ++j) sums[r][j] = _mm512_fmadd_ps(weights[j], input, sums[r][j]);
    }
  }
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(acc + r * kBlock + 16 * j, sums[r][j]);
  }
}

/// The same in bfloat16: one dot product per live pair of inputs, accumulated in float32.
template <int N>
TFM_BF16_DOT_TARGET void bfloat16_rows(const c10::BFloat16* block, const c10::BFloat16* x, int64_t in,
                                       const int32_t* live, int64_t count, float* acc) {
  __m512 sums[N][4];
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < 4; ++j) sums[r][j] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) prefetch_slice(block + live[i + kPrefetchAhead] * 2 * kBlock);
    const int64_t pair = live[i];
    const c10::BFloat16* slice = block + pair * 2 * kBlock;  // [64 outputs, 2 inputs]
    __m512bh weights[4];
    for (int j = 0; j < 4; ++j) weights[j] = (__m512bh)_mm512_loadu_si512(slice + 32 * j);
    for (int r = 0; r < N; ++r) {
      int32_t both = 0;  // the row's two inputs of the pair, as one word
      std::memcpy(&both, x + r * in + 2 * pair, sizeof both);
      const __m512bh input = (__m512bh)_mm512_set1_epi32(both);
      for (int j = 0; j < 4; ++j) sums[r][j] = _mm512_dpbf16_ps(sums[r][j], weights[j], input);
    }
  }
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(acc + r * kBlock + 16 * j, sums[r][j]);
  }
}

/// Rows in groups of up to 4: a group's 16 sums and a slice's 4 vectors stay in registers.
template <typename T, typename Rows>
void in_row_groups(const T* block, const T* x, int64_t rows, int64_t in, const int32_t* live, int64_t count, float* acc,
                   Rows run) {
  for (int64_t first = 0; first < rows; first += 4) {
    const T* group = x + first * in;
    float* out = acc + first * kBlock;
    switch (std::min<int64_t>(4, rows - first)) {
      case 1: run(std::integral_constant<int, 1>(), block, group, in, live, count, out); break;
      case 2: run(std::integral_constant<int, 2>(), block, group, in, live, count, out); break;
      case 3: run(std::integral_constant<int, 3>(), block, group, in, live, count, out); break;
      default: run(std::integral_constant<int, 4>(), block, group, in, live, count, out); break;
    }
  }
}

#endif

}  // namespace

bool live_inputs_kernels(bool bfloat16) {
#ifdef TFM_EXTENSION_KERNELS
  static const bool float_kernels = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  static const bool bfloat16_kernels = float_kernels && __builtin_cpu_supports("avx512bf16");
  return bfloat16 ? bfloat16_kernels : float_kernels;
#else
  (void)bfloat16;
  return false;
#endif
}

void find_live_inputs(const float* x, int64_t rows, int64_t in, std::vector<int32_t>& live) {
#ifdef TFM_EXTENSION_KERNELS
  if (live_inputs_kernels(false)) {
    find_live_words(reinterpret_cast<const uint32_t*>(x), rows, in, in, 0x7fffffffU, live);
    return;
  }
  if (__builtin_cpu_supports("avx2")) {
    find_live_words_avx2(reinterpret_cast<const uint32_t*>(x), rows, in, 0x7fffffffU, live);
    return;
  }
#endif
  live.clear();
  append_live_words_portably(reinterpret_cast<const uint32_t*>(x), rows, in, 0, in, 0x7fffffffU, live);
}

void find_live_inputs(const c10::BFloat16* x, int64_t rows, int64_t in, std::vector<int32_t>& live) {
  TORCH_CHECK(live_inputs_kernels(true) && in % 2 == 0,
              "find_live_inputs: bfloat16 needs AVX512-BF16 and an even number of inputs");
#ifdef TFM_EXTENSION_KERNELS
  find_live_words(reinterpret_cast<const uint32_t*>(x), rows, in / 2, in / 2, 0x7fff7fffU, live);
#endif
}

void multiply_live_inputs(const float* block, const float* x, int64_t rows, int64_t in, const int32_t* live,
                          int64_t count, float* acc) {
  TORCH_CHECK(live_inputs_kernels(false) && rows >= 1 && rows <= kLiveInputsMaxRows,
              "multiply_live_inputs: AVX-512 and 1 to ", kLiveInputsMaxRows, " rows are needed");
#ifdef TFM_EXTENSION_KERNELS
  in_row_groups(block, x, rows, in, live, count, acc,
                [](auto n, auto... args) { float_rows<decltype(n)::value>(args...); });
#endif
}

void multiply_live_inputs(const c10::BFloat16* block, const c10::BFloat16* x, int64_t rows, int64_t in,
                          const int32_t* live, int64_t count, float* acc) {
  TORCH_CHECK(live_inputs_kernels(true) && rows >= 1 && rows <= kLiveInputsMaxRows && in % 2 == 0,
              "multiply_live_inputs: AVX512-BF16, 1 to ", kLiveInputsMaxRows, " rows and even inputs are needed");
#ifdef TFM_EXTENSION_KERNELS
  in_row_groups(block, x, rows, in, live, count, acc,
                [](auto n, auto... args) { bfloat16_rows<decltype(n)::value>(args...); });
#endif
}

}  // namespace tfm
