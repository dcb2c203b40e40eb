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

/// exp_nonpositive (runtime/fast_exp.h) lane by lane: the same operations, so the same results.
TFM_ALWAYS_INLINE FloatLanes exp_nonpositive(FloatLanes input) {
  const FloatLanes x = input < -87.0F ? splat(-87.0F) : input;
  constexpr float kRound = 12582912.0F;  // 1.5 * 2^23: adding it rounds to an integer
  const FloatLanes shifted = x * 1.44269504F + kRound;
  const FloatLanes n = shifted - kRound;                              // round(x / ln 2)
  const FloatLanes f = (x - n * 0.693359375F) - n * -2.12194440e-4F;  // x - n ln 2, in two parts
  FloatLanes p = splat(1.9875691500e-4F);
  p = p * f + 1.3981999507e-3F;
  p = p * f + 8.3334519073e-3F;
  p = p * f + 4.1665795894e-2F;
  p = p * f + 1.6666665459e-1F;
  p = p * f + 5.0000001201e-1F;
  const FloatLanes mantissa = p * f * f + f + 1.0F;
  IntLanes bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  const IntLanes scale_bits = ((bits - 0x4B400000) + 127) << 23;  // 2^n, from shifted's low bits
  FloatLanes scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return input < -87.0F ? splat(0.0F) : mantissa * scale;
}

}  // namespace tfm
