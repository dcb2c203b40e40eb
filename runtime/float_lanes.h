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

}  // namespace tfm
