#pragma once
#include <cstdint>
#include <cstring>

#include <c10/util/BFloat16.h>

#include "runtime/fast_exp.h"
#include "runtime/vector_clones.h"

// kVectorLanes floats as one GCC vector, for kernels whose loops the compiler does not vectorize
// from plain arrays: a bfloat16 row read into an array of 16 lane sums is compiled to 16 scalar
// loads and maxima. Each operation here is written once and becomes the widest instructions of
// the TFM_VECTOR_CLONES version it is inlined into (two AVX2 registers, one AVX-512 register).

namespace tfm {

using FloatLanes = float __attribute__((vector_size(kVectorLanes * sizeof(float))));
using IntLanes = int32_t __attribute__((vector_size(kVectorLanes * sizeof(int32_t))));
template <>
struct IntsOf<FloatLanes> {  // for exp_nonpositive(FloatLanes), runtime/fast_exp.h
  using type = IntLanes;
};

/// Every lane x.
TFM_ALWAYS_INLINE FloatLanes splat(float x) { return FloatLanes{} + x; }

/// p[0 .. kVectorLanes) as floats.
TFM_ALWAYS_INLINE FloatLanes load_lanes(const float* p) {
  FloatLanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
/// A bfloat16 is a float's upper 16 bits: widened exactly by a shift.
TFM_ALWAYS_INLINE FloatLanes load_lanes(const c10::BFloat16* p) {
  using Halves = uint16_t __attribute__((vector_size(kVectorLanes * sizeof(uint16_t))));
  using Words = uint32_t __attribute__((vector_size(kVectorLanes * sizeof(uint32_t))));
  Halves halves;
  std::memcpy(&halves, p, sizeof halves);
  const Words words = __builtin_convertvector(halves, Words) << 16;
  FloatLanes v;
  std::memcpy(&v, &words, sizeof v);
  return v;
}

/// v into p[0 .. kVectorLanes).
TFM_ALWAYS_INLINE void store_lanes(float* p, FloatLanes v) { std::memcpy(p, &v, sizeof v); }
/// Rounded to nearest even as c10::BFloat16(float) does, NaN to its quiet NaN.
TFM_ALWAYS_INLINE void store_lanes(c10::BFloat16* p, FloatLanes v) {
  using Halves = uint16_t __attribute__((vector_size(kVectorLanes * sizeof(uint16_t))));
  using Words = uint32_t __attribute__((vector_size(kVectorLanes * sizeof(uint32_t))));
  Words words;
  std::memcpy(&words, &v, sizeof words);
  const Words rounded = (words + (((words >> 16) & 1U) + 0x7FFFU)) >> 16;
  const Words quiet_nan = Words{} + 0x7FC0U;
  const Halves halves = __builtin_convertvector(v != v ? quiet_nan : rounded, Halves);
  std::memcpy(p, &halves, sizeof halves);
}

TFM_ALWAYS_INLINE FloatLanes max_lanes(FloatLanes a, FloatLanes b) { return a > b ? a : b; }

/// max over the lanes (exact in any order).
TFM_ALWAYS_INLINE float max_of_lanes(FloatLanes v) {
  v = max_lanes(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  v = max_lanes(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  v = max_lanes(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  v = max_lanes(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return v[0];
}

/// Lane i of the result: the sum of v[i]'s lanes, added in sum_of_lanes()'s order (lane j with
/// j + 8, then + 4, + 2, + 1), so bit for bit the same; 15 vector additions for 16 sums instead of
/// 16 dependent chains of 4.
TFM_ALWAYS_INLINE FloatLanes sums_of_lanes(const FloatLanes (&v)[kVectorLanes]) {
  static_assert(kVectorLanes == 16, "the shuffles below halve 16 lanes");
  FloatLanes halves[8], quarters[4], eighths[2];
  for (int j = 0; j < 8; ++j) {  // items 2j, 2j+1: lanes 0..7 of each, + lanes 8..15
    const FloatLanes a = v[2 * j], b = v[2 * j + 1];
    halves[j] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  }
  for (int j = 0; j < 4; ++j) {  // items 4j .. 4j+3, four lanes each
    const FloatLanes a = halves[2 * j], b = halves[2 * j + 1];
    quarters[j] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
                  __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  }
  for (int j = 0; j < 2; ++j) {  // items 8j .. 8j+7, two lanes each
    const FloatLanes a = quarters[2 * j], b = quarters[2 * j + 1];
    eighths[j] = __builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
                 __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  }
  const FloatLanes a = eighths[0], b = eighths[1];
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
         __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

}  // namespace tfm
