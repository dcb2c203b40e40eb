#pragma once
#include <cstdint>
#include <cstring>

#include <c10/util/BFloat16.h>

#include "runtime/fast_exp.h"
#include "runtime/vector_clones.h"

// kVectorLanes (16) floats as two GCC vectors of 8, for kernels whose loops the compiler does not
// vectorize from plain arrays: a bfloat16 row read into an array of 16 lane sums is compiled to
// 16 scalar loads and maxima. Each operation here is written once and acts lane by lane, so a
// result is the same on every CPU; what differs is the instructions of the TFM_VECTOR_CLONES
// version it is inlined into. Two halves of 8, not one vector of 16: 8 floats are one AVX
// register, while GCC keeps a 16-float vector in memory where AVX-512 is missing (the AVX2 clone
// ran ten times slower, BENCHMARKS.md).

namespace tfm {

using FloatHalf = float __attribute__((vector_size(32)));
using IntHalf = int32_t __attribute__((vector_size(32)));
static_assert(kVectorLanes == 16, "FloatLanes holds two halves of 8");

/// Lanes 0-7 in `lo`, 8-15 in `hi`.
struct FloatLanes {
  FloatHalf lo, hi;
  float operator[](int64_t lane) const { return lane < 8 ? lo[lane] : hi[lane - 8]; }
};
/// A comparison's result per lane: -1 (true) or 0, or an integer per lane.
struct IntLanes {
  IntHalf lo, hi;
  int32_t operator[](int64_t lane) const { return lane < 8 ? lo[lane] : hi[lane - 8]; }
};

// Arithmetic lane by lane, with lanes or with one float for every lane.
#define TFM_LANES_OPERATOR(op)                                                                                  \
  TFM_ALWAYS_INLINE FloatLanes operator op(FloatLanes a, FloatLanes b) { return {a.lo op b.lo, a.hi op b.hi}; } \
  TFM_ALWAYS_INLINE FloatLanes operator op(FloatLanes a, float b) { return {a.lo op b, a.hi op b}; }            \
  TFM_ALWAYS_INLINE FloatLanes operator op(float a, FloatLanes b) { return {a op b.lo, a op b.hi}; }
TFM_LANES_OPERATOR(+)
TFM_LANES_OPERATOR(-)
TFM_LANES_OPERATOR(*)
TFM_LANES_OPERATOR(/)
#undef TFM_LANES_OPERATOR
TFM_ALWAYS_INLINE FloatLanes& operator+=(FloatLanes& a, FloatLanes b) { return a = a + b; }

#define TFM_LANES_COMPARISON(op)                                                                              \
  TFM_ALWAYS_INLINE IntLanes operator op(FloatLanes a, FloatLanes b) { return {a.lo op b.lo, a.hi op b.hi}; } \
  TFM_ALWAYS_INLINE IntLanes operator op(FloatLanes a, float b) { return {a.lo op b, a.hi op b}; }
TFM_LANES_COMPARISON(<)
TFM_LANES_COMPARISON(>)
TFM_LANES_COMPARISON(==)
TFM_LANES_COMPARISON(!=)
#undef TFM_LANES_COMPARISON

TFM_ALWAYS_INLINE IntLanes operator+(IntLanes a, int32_t b) { return {a.lo + b, a.hi + b}; }
TFM_ALWAYS_INLINE IntLanes operator-(IntLanes a, int32_t b) { return {a.lo - b, a.hi - b}; }
TFM_ALWAYS_INLINE IntLanes operator<<(IntLanes a, int32_t b) { return {a.lo << b, a.hi << b}; }

/// Per lane: `yes` where `condition` is true (nonzero), else `no`.
TFM_ALWAYS_INLINE FloatLanes where(IntLanes condition, FloatLanes yes, FloatLanes no) {
  return {condition.lo ? yes.lo : no.lo, condition.hi ? yes.hi : no.hi};
}
/// The lanes' bits as integers, and back (for exp_nonpositive's exponent).
TFM_ALWAYS_INLINE IntLanes to_bits(FloatLanes v) {
  return {reinterpret_cast<IntHalf>(v.lo), reinterpret_cast<IntHalf>(v.hi)};
}
TFM_ALWAYS_INLINE FloatLanes from_bits(IntLanes v) {
  return {reinterpret_cast<FloatHalf>(v.lo), reinterpret_cast<FloatHalf>(v.hi)};
}

/// Every lane x.
TFM_ALWAYS_INLINE FloatLanes splat(float x) { return FloatLanes{} + x; }

/// p[0 .. kVectorLanes) as floats.
TFM_ALWAYS_INLINE FloatLanes load_lanes(const float* p) {
  FloatLanes v;
  std::memcpy(&v.lo, p, sizeof v.lo);
  std::memcpy(&v.hi, p + 8, sizeof v.hi);
  return v;
}
/// A bfloat16 is a float's upper 16 bits: widened exactly by a shift.
TFM_ALWAYS_INLINE FloatHalf load_half(const c10::BFloat16* p) {
  using Shorts = uint16_t __attribute__((vector_size(16)));
  using Words = uint32_t __attribute__((vector_size(32)));
  Shorts shorts;
  std::memcpy(&shorts, p, sizeof shorts);
  const Words words = __builtin_convertvector(shorts, Words) << 16;
  return reinterpret_cast<FloatHalf>(words);
}
TFM_ALWAYS_INLINE FloatLanes load_lanes(const c10::BFloat16* p) { return {load_half(p), load_half(p + 8)}; }

/// v into p[0 .. kVectorLanes).
TFM_ALWAYS_INLINE void store_lanes(float* p, FloatLanes v) {
  std::memcpy(p, &v.lo, sizeof v.lo);
  std::memcpy(p + 8, &v.hi, sizeof v.hi);
}
/// Rounded to nearest even as c10::BFloat16(float) does, NaN to its quiet NaN.
TFM_ALWAYS_INLINE void store_half(c10::BFloat16* p, FloatHalf v) {
  using Shorts = uint16_t __attribute__((vector_size(16)));
  using Words = uint32_t __attribute__((vector_size(32)));
  const Words words = reinterpret_cast<Words>(v);
  const Words rounded = (words + (((words >> 16) & 1U) + 0x7FFFU)) >> 16;
  const Words quiet_nan = Words{} + 0x7FC0U;
  const Shorts shorts = __builtin_convertvector(v != v ? quiet_nan : rounded, Shorts);
  std::memcpy(p, &shorts, sizeof shorts);
}
TFM_ALWAYS_INLINE void store_lanes(c10::BFloat16* p, FloatLanes v) {
  store_half(p, v.lo);
  store_half(p + 8, v.hi);
}

TFM_ALWAYS_INLINE FloatHalf max_half(FloatHalf a, FloatHalf b) { return a > b ? a : b; }
TFM_ALWAYS_INLINE FloatLanes max_lanes(FloatLanes a, FloatLanes b) {
  return {max_half(a.lo, b.lo), max_half(a.hi, b.hi)};
}

/// max over the lanes: lane j against j + 8, then + 4, + 2, + 1 (exact in any order).
TFM_ALWAYS_INLINE float max_of_lanes(FloatLanes v) {
  FloatHalf m = max_half(v.lo, v.hi);
  m = max_half(m, __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3));
  m = max_half(m, __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5));
  m = max_half(m, __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6));
  return m[0];
}

/// The sum of v's lanes: lane j with j + 8, then + 4, + 2, + 1.
TFM_ALWAYS_INLINE float sum_of_lanes(FloatLanes v) {
  FloatHalf s = v.lo + v.hi;
  s += __builtin_shufflevector(s, s, 4, 5, 6, 7, 0, 1, 2, 3);
  s += __builtin_shufflevector(s, s, 2, 3, 0, 1, 6, 7, 4, 5);
  s += __builtin_shufflevector(s, s, 1, 0, 3, 2, 5, 4, 7, 6);
  return s[0];
}

/// Lane i of the result: sum_of_lanes(v[i]), bit for bit (the same pairings); 15 vector
/// additions for 16 sums instead of 16 dependent chains of 4.
TFM_ALWAYS_INLINE FloatLanes sums_of_lanes(const FloatLanes (&v)[kVectorLanes]) {
  // Step by step, each vector's lanes are folded in half and two vectors' halves share one: after
  // the first step halves[j] holds vectors 2j and 2j+1 in 8 lanes each (lane k + lane k + 8).
  FloatLanes halves[8], quarters[4], eighths[2];
  for (int j = 0; j < 8; ++j) halves[j] = {v[2 * j].lo + v[2 * j].hi, v[2 * j + 1].lo + v[2 * j + 1].hi};
  for (int j = 0; j < 4; ++j) {  // vectors 4j .. 4j+3, four lanes each: lane k with k + 4
    const FloatLanes x = halves[2 * j], y = halves[2 * j + 1];
    quarters[j] = {__builtin_shufflevector(x.lo, x.hi, 0, 1, 2, 3, 8, 9, 10, 11) +
                       __builtin_shufflevector(x.lo, x.hi, 4, 5, 6, 7, 12, 13, 14, 15),
                   __builtin_shufflevector(y.lo, y.hi, 0, 1, 2, 3, 8, 9, 10, 11) +
                       __builtin_shufflevector(y.lo, y.hi, 4, 5, 6, 7, 12, 13, 14, 15)};
  }
  for (int j = 0; j < 2; ++j) {  // vectors 8j .. 8j+7, two lanes each: lane k with k + 2
    const FloatLanes x = quarters[2 * j], y = quarters[2 * j + 1];
    eighths[j] = {__builtin_shufflevector(x.lo, x.hi, 0, 1, 4, 5, 8, 9, 12, 13) +
                      __builtin_shufflevector(x.lo, x.hi, 2, 3, 6, 7, 10, 11, 14, 15),
                  __builtin_shufflevector(y.lo, y.hi, 0, 1, 4, 5, 8, 9, 12, 13) +
                      __builtin_shufflevector(y.lo, y.hi, 2, 3, 6, 7, 10, 11, 14, 15)};
  }
  const FloatLanes x = eighths[0], y = eighths[1];  // one lane each: lane k with k + 1
  return {__builtin_shufflevector(x.lo, x.hi, 0, 2, 4, 6, 8, 10, 12, 14) +
              __builtin_shufflevector(x.lo, x.hi, 1, 3, 5, 7, 9, 11, 13, 15),
          __builtin_shufflevector(y.lo, y.hi, 0, 2, 4, 6, 8, 10, 12, 14) +
              __builtin_shufflevector(y.lo, y.hi, 1, 3, 5, 7, 9, 11, 13, 15)};
}

}  // namespace tfm
