#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <c10/util/BFloat16.h>

#include "runtime/fast_exp.h"
#include "runtime/vector_clones.h"

// kVectorLanes (16) floats as GCC vectors, for kernels whose loops the compiler does not vectorize
// from plain arrays: a bfloat16 row read into an array of 16 lane sums is compiled to 16 scalar
// loads and maxima. Two types hold the 16 lanes, one per kind of CPU, with the same operations:
//   WideLanes   one vector of 16: one AVX-512 register;
//   SplitLanes  two vectors of 8: one AVX register each. GCC keeps a vector of 16 in memory where
//               AVX-512 is missing (the AVX2 version ran ten times slower), and does not join two
//               vectors of 8 into one AVX-512 register (30% slower there; BENCHMARKS.md);
//   QuarterLanes  four vectors of 4: one SSE or NEON register each, for the baseline.
// Kernels are templates over the type (Lanes); TFM_LANE_KERNEL (runtime/vector_clones.h) compiles
// them with WideLanes for AVX-512, SplitLanes for AVX2 and QuarterLanes elsewhere. Every operation acts lane by lane
// and every reduction pairs lanes in one stated order, so a result is the same bits on every CPU.

namespace tfm {

using FloatQuarter = float __attribute__((vector_size(16)));
using IntQuarter = int32_t __attribute__((vector_size(16)));
using FloatHalf = float __attribute__((vector_size(32)));
using IntHalf = int32_t __attribute__((vector_size(32)));
using FloatWhole = float __attribute__((vector_size(64)));
using IntWhole = int32_t __attribute__((vector_size(64)));
static_assert(kVectorLanes == 16, "the lane types hold 16 floats");

/// The 16-bit and 32-bit unsigned vectors of as many lanes as Floats (FloatHalf or FloatWhole):
/// the bfloat16 loads' and stores' bits.
template <typename Floats>
struct BitsOf;
template <>
struct BitsOf<FloatQuarter> {
  using Shorts = uint16_t __attribute__((vector_size(8)));
  using Words = uint32_t __attribute__((vector_size(16)));
};
template <>
struct BitsOf<FloatHalf> {
  using Shorts = uint16_t __attribute__((vector_size(16)));
  using Words = uint32_t __attribute__((vector_size(32)));
};
template <>
struct BitsOf<FloatWhole> {
  using Shorts = uint16_t __attribute__((vector_size(32)));
  using Words = uint32_t __attribute__((vector_size(64)));
};

/// 16 lanes in one vector.
struct WideLanes {
  FloatWhole v;
  float operator[](int64_t lane) const { return v[lane]; }
};
/// A comparison's result per lane (-1 true, 0 false), or an integer per lane.
struct WideInts {
  IntWhole v;
  int32_t operator[](int64_t lane) const { return v[lane]; }
};
/// 16 lanes as two vectors: lanes 0-7 in `lo`, 8-15 in `hi`.
struct SplitLanes {
  FloatHalf lo, hi;
  float operator[](int64_t lane) const { return lane < 8 ? lo[lane] : hi[lane - 8]; }
};
struct SplitInts {
  IntHalf lo, hi;
  int32_t operator[](int64_t lane) const { return lane < 8 ? lo[lane] : hi[lane - 8]; }
};
/// 16 lanes as four vectors: lanes 4i .. 4i+3 in q[i].
struct QuarterLanes {
  FloatQuarter q[4];
  float operator[](int64_t lane) const { return q[lane / 4][lane % 4]; }
};
struct QuarterInts {
  IntQuarter q[4];
  int32_t operator[](int64_t lane) const { return q[lane / 4][lane % 4]; }
};

// Arithmetic and comparisons lane by lane, with lanes or with one float for every lane.
#define TFM_LANES_ARITHMETIC(op)                                                                                \
  TFM_ALWAYS_INLINE WideLanes operator op(WideLanes a, WideLanes b) { return {a.v op b.v}; }                    \
  TFM_ALWAYS_INLINE WideLanes operator op(WideLanes a, float b) { return {a.v op b}; }                          \
  TFM_ALWAYS_INLINE WideLanes operator op(float a, WideLanes b) { return {a op b.v}; }                          \
  TFM_ALWAYS_INLINE SplitLanes operator op(SplitLanes a, SplitLanes b) { return {a.lo op b.lo, a.hi op b.hi}; } \
  TFM_ALWAYS_INLINE SplitLanes operator op(SplitLanes a, float b) { return {a.lo op b, a.hi op b}; }            \
  TFM_ALWAYS_INLINE SplitLanes operator op(float a, SplitLanes b) { return {a op b.lo, a op b.hi}; }            \
  TFM_ALWAYS_INLINE QuarterLanes operator op(QuarterLanes a, QuarterLanes b) {                                  \
    return {{a.q[0] op b.q[0], a.q[1] op b.q[1], a.q[2] op b.q[2], a.q[3] op b.q[3]}};                          \
  }                                                                                                             \
  TFM_ALWAYS_INLINE QuarterLanes operator op(QuarterLanes a, float b) {                                         \
    return {{a.q[0] op b, a.q[1] op b, a.q[2] op b, a.q[3] op b}};                                              \
  }                                                                                                             \
  TFM_ALWAYS_INLINE QuarterLanes operator op(float a, QuarterLanes b) {                                         \
    return {{a op b.q[0], a op b.q[1], a op b.q[2], a op b.q[3]}};                                              \
  }
TFM_LANES_ARITHMETIC(+)
TFM_LANES_ARITHMETIC(-)
TFM_LANES_ARITHMETIC(*)
TFM_LANES_ARITHMETIC(/)
#undef TFM_LANES_ARITHMETIC
TFM_ALWAYS_INLINE WideLanes& operator+=(WideLanes& a, WideLanes b) { return a = a + b; }
TFM_ALWAYS_INLINE SplitLanes& operator+=(SplitLanes& a, SplitLanes b) { return a = a + b; }
TFM_ALWAYS_INLINE QuarterLanes& operator+=(QuarterLanes& a, QuarterLanes b) { return a = a + b; }

#define TFM_LANES_COMPARISON(op)                                                                               \
  TFM_ALWAYS_INLINE WideInts operator op(WideLanes a, WideLanes b) { return {a.v op b.v}; }                    \
  TFM_ALWAYS_INLINE WideInts operator op(WideLanes a, float b) { return {a.v op b}; }                          \
  TFM_ALWAYS_INLINE SplitInts operator op(SplitLanes a, SplitLanes b) { return {a.lo op b.lo, a.hi op b.hi}; } \
  TFM_ALWAYS_INLINE SplitInts operator op(SplitLanes a, float b) { return {a.lo op b, a.hi op b}; }            \
  TFM_ALWAYS_INLINE QuarterInts operator op(QuarterLanes a, QuarterLanes b) {                                  \
    return {{a.q[0] op b.q[0], a.q[1] op b.q[1], a.q[2] op b.q[2], a.q[3] op b.q[3]}};                         \
  }                                                                                                            \
  TFM_ALWAYS_INLINE QuarterInts operator op(QuarterLanes a, float b) {                                         \
    return {{a.q[0] op b, a.q[1] op b, a.q[2] op b, a.q[3] op b}};                                             \
  }
TFM_LANES_COMPARISON(<)
TFM_LANES_COMPARISON(>)
TFM_LANES_COMPARISON(==)
TFM_LANES_COMPARISON(!=)
#undef TFM_LANES_COMPARISON

#define TFM_INTS_ARITHMETIC(op)                                                                      \
  TFM_ALWAYS_INLINE WideInts operator op(WideInts a, int32_t b) { return {a.v op b}; }               \
  TFM_ALWAYS_INLINE SplitInts operator op(SplitInts a, int32_t b) { return {a.lo op b, a.hi op b}; } \
  TFM_ALWAYS_INLINE QuarterInts operator op(QuarterInts a, int32_t b) {                              \
    return {{a.q[0] op b, a.q[1] op b, a.q[2] op b, a.q[3] op b}};                                   \
  }
TFM_INTS_ARITHMETIC(+)
TFM_INTS_ARITHMETIC(-)
TFM_INTS_ARITHMETIC(<<)
TFM_INTS_ARITHMETIC(&)
#undef TFM_INTS_ARITHMETIC

/// Per lane: `yes` where `condition` is true (nonzero), else `no`.
TFM_ALWAYS_INLINE WideLanes where(WideInts condition, WideLanes yes, WideLanes no) {
  return {condition.v ? yes.v : no.v};
}
TFM_ALWAYS_INLINE SplitLanes where(SplitInts condition, SplitLanes yes, SplitLanes no) {
  return {condition.lo ? yes.lo : no.lo, condition.hi ? yes.hi : no.hi};
}
TFM_ALWAYS_INLINE QuarterLanes where(QuarterInts condition, QuarterLanes yes, QuarterLanes no) {
  QuarterLanes out;
  for (int i = 0; i < 4; ++i) out.q[i] = condition.q[i] ? yes.q[i] : no.q[i];
  return out;
}
/// The lanes' bits as integers, and back (exp_nonpositive's exponent).
TFM_ALWAYS_INLINE WideInts to_bits(WideLanes x) { return {reinterpret_cast<IntWhole>(x.v)}; }
TFM_ALWAYS_INLINE WideLanes from_bits(WideInts x) { return {reinterpret_cast<FloatWhole>(x.v)}; }
TFM_ALWAYS_INLINE SplitInts to_bits(SplitLanes x) {
  return {reinterpret_cast<IntHalf>(x.lo), reinterpret_cast<IntHalf>(x.hi)};
}
TFM_ALWAYS_INLINE SplitLanes from_bits(SplitInts x) {
  return {reinterpret_cast<FloatHalf>(x.lo), reinterpret_cast<FloatHalf>(x.hi)};
}
TFM_ALWAYS_INLINE QuarterInts to_bits(QuarterLanes x) {
  QuarterInts out;
  for (int i = 0; i < 4; ++i) out.q[i] = reinterpret_cast<IntQuarter>(x.q[i]);
  return out;
}
TFM_ALWAYS_INLINE QuarterLanes from_bits(QuarterInts x) {
  QuarterLanes out;
  for (int i = 0; i < 4; ++i) out.q[i] = reinterpret_cast<FloatQuarter>(x.q[i]);
  return out;
}

/// Every lane x.
template <typename Lanes>
TFM_ALWAYS_INLINE Lanes splat(float x) {
  return Lanes{} + x;
}
/// The same lanes with lane 0 replaced by x.
TFM_ALWAYS_INLINE WideLanes with_lane0(WideLanes lanes, float x) {
  lanes.v[0] = x;
  return lanes;
}
TFM_ALWAYS_INLINE SplitLanes with_lane0(SplitLanes lanes, float x) {
  lanes.lo[0] = x;
  return lanes;
}
TFM_ALWAYS_INLINE QuarterLanes with_lane0(QuarterLanes lanes, float x) {
  lanes.q[0][0] = x;
  return lanes;
}

/// 8 or 16 floats from p; a bfloat16 is a float's upper 16 bits, widened exactly by a shift.
template <typename Floats>
TFM_ALWAYS_INLINE Floats load_floats(const float* p) {
  Floats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename Floats>
TFM_ALWAYS_INLINE Floats load_floats(const c10::BFloat16* p) {
  using Shorts = typename BitsOf<Floats>::Shorts;
  using Words = typename BitsOf<Floats>::Words;
  Shorts shorts;
  std::memcpy(&shorts, p, sizeof shorts);
  return reinterpret_cast<Floats>(__builtin_convertvector(shorts, Words) << 16);
}
/// p[0 .. kVectorLanes) as floats.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE Lanes load_lanes(const T* p) {
  if constexpr (std::is_same_v<Lanes, WideLanes>) {
    return {load_floats<FloatWhole>(p)};
  } else if constexpr (std::is_same_v<Lanes, SplitLanes>) {
    return {load_floats<FloatHalf>(p), load_floats<FloatHalf>(p + 8)};
  } else {
    return {{load_floats<FloatQuarter>(p), load_floats<FloatQuarter>(p + 4), load_floats<FloatQuarter>(p + 8),
             load_floats<FloatQuarter>(p + 12)}};
  }
}

/// p[0 .. 2 * kVectorLanes) as floats, split into the even-numbered elements and the odd ones: one
/// 32-bit word per lane holds a pair, so each half is a shift or a mask, where load_lanes widens
/// every element on its own. For sums over all 32 (dot products), in which order does not matter.
template <typename Lanes>
TFM_ALWAYS_INLINE void load_bfloat16_pairs(const c10::BFloat16* p, Lanes& even, Lanes& odd) {
  const auto pairs = to_bits(load_lanes<Lanes>(reinterpret_cast<const float*>(p)));
  even = from_bits(pairs << 16);
  odd = from_bits(pairs & static_cast<int32_t>(0xFFFF0000U));
}

/// 8 or 16 floats into p; into bfloat16 rounded to nearest even as c10::BFloat16(float) does, NaN
/// to its quiet NaN.
template <typename Floats>
TFM_ALWAYS_INLINE void store_floats(float* p, Floats v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename Floats>
TFM_ALWAYS_INLINE void store_floats(c10::BFloat16* p, Floats v) {
  using Shorts = typename BitsOf<Floats>::Shorts;
  using Words = typename BitsOf<Floats>::Words;
  const Words words = reinterpret_cast<Words>(v);
  const Words rounded = (words + (((words >> 16) & 1U) + 0x7FFFU)) >> 16;
  const Words quiet_nan = Words{} + 0x7FC0U;
  const Shorts shorts = __builtin_convertvector(v != v ? quiet_nan : rounded, Shorts);
  std::memcpy(p, &shorts, sizeof shorts);
}
/// v into p[0 .. kVectorLanes).
template <typename T>
TFM_ALWAYS_INLINE void store_lanes(T* p, WideLanes v) {
  store_floats(p, v.v);
}
template <typename T>
TFM_ALWAYS_INLINE void store_lanes(T* p, SplitLanes v) {
  store_floats(p, v.lo);
  store_floats(p + 8, v.hi);
}
template <typename T>
TFM_ALWAYS_INLINE void store_lanes(T* p, QuarterLanes v) {
  for (int i = 0; i < 4; ++i) store_floats(p + 4 * i, v.q[i]);
}

/// v rounded to bfloat16 and widened back, as a bfloat16 op's result is before a float op reads it.
template <typename Lanes>
TFM_ALWAYS_INLINE Lanes rounded_to_bfloat16(Lanes v) {
  c10::BFloat16 held[kVectorLanes];
  store_lanes(held, v);
  return load_lanes<Lanes>(held);
}

TFM_ALWAYS_INLINE WideLanes max_lanes(WideLanes a, WideLanes b) { return {a.v > b.v ? a.v : b.v}; }
TFM_ALWAYS_INLINE FloatHalf max_half(FloatHalf a, FloatHalf b) { return a > b ? a : b; }
TFM_ALWAYS_INLINE SplitLanes max_lanes(SplitLanes a, SplitLanes b) {
  return {max_half(a.lo, b.lo), max_half(a.hi, b.hi)};
}
TFM_ALWAYS_INLINE FloatQuarter max_quarter(FloatQuarter a, FloatQuarter b) { return a > b ? a : b; }
TFM_ALWAYS_INLINE QuarterLanes max_lanes(QuarterLanes a, QuarterLanes b) {
  QuarterLanes out;
  for (int i = 0; i < 4; ++i) out.q[i] = max_quarter(a.q[i], b.q[i]);
  return out;
}

/// Lanes 0-7 of the result: a's lane j against a's lane j + 8 by `fold` (max or +); lanes 8-15:
/// b's. What both reductions below start with.
template <typename Fold>
TFM_ALWAYS_INLINE SplitLanes fold_halves(WideLanes a, WideLanes b, Fold fold) {
  return {fold(__builtin_shufflevector(a.v, a.v, 0, 1, 2, 3, 4, 5, 6, 7),
               __builtin_shufflevector(a.v, a.v, 8, 9, 10, 11, 12, 13, 14, 15)),
          fold(__builtin_shufflevector(b.v, b.v, 0, 1, 2, 3, 4, 5, 6, 7),
               __builtin_shufflevector(b.v, b.v, 8, 9, 10, 11, 12, 13, 14, 15))};
}
template <typename Fold>
TFM_ALWAYS_INLINE SplitLanes fold_halves(SplitLanes a, SplitLanes b, Fold fold) {
  return {fold(a.lo, a.hi), fold(b.lo, b.hi)};
}

/// 8 lanes folded to one: lane j with j + 4, then + 2, then + 1.
template <typename Fold>
TFM_ALWAYS_INLINE float fold_eight(FloatHalf h, Fold fold) {
  h = fold(h, __builtin_shufflevector(h, h, 4, 5, 6, 7, 0, 1, 2, 3));
  h = fold(h, __builtin_shufflevector(h, h, 2, 3, 0, 1, 6, 7, 4, 5));
  h = fold(h, __builtin_shufflevector(h, h, 1, 0, 3, 2, 5, 4, 7, 6));
  return h[0];
}

/// max over the lanes: lane j against j + 8, then + 4, + 2, + 1 (exact in any order).
template <typename Lanes>
TFM_ALWAYS_INLINE float max_of_lanes(Lanes v) {
  return fold_eight(fold_halves(v, v, max_half).lo, max_half);
}

/// The sum of v's lanes: lane j with j + 8, then + 4, + 2, + 1.
template <typename Lanes>
TFM_ALWAYS_INLINE float sum_of_lanes(Lanes v) {
  const auto add = [](FloatHalf a, FloatHalf b) { return a + b; };
  return fold_eight(fold_halves(v, v, add).lo, add);
}

template <int... Lanes>
using LaneList = std::integer_sequence<int, Lanes...>;

/// Lanes First of (lo, hi) plus lanes Second of (lo, hi), 16 lanes read as one.
template <int... First, int... Second>
TFM_ALWAYS_INLINE FloatHalf add_picked(FloatHalf lo, FloatHalf hi, LaneList<First...>, LaneList<Second...>) {
  return __builtin_shufflevector(lo, hi, First...) + __builtin_shufflevector(lo, hi, Second...);
}
/// add_picked() of x into the lower half and of y into the upper one.
template <typename First, typename Second>
TFM_ALWAYS_INLINE SplitLanes add_picked(SplitLanes x, SplitLanes y) {
  return {add_picked(x.lo, x.hi, First{}, Second{}), add_picked(y.lo, y.hi, First{}, Second{})};
}

/// Lane i of the result: sum_of_lanes(v[i]), bit for bit (the same pairings); 15 vector
/// additions for 16 sums instead of 16 dependent chains of 4.
template <typename Lanes>
TFM_ALWAYS_INLINE Lanes sums_of_lanes(const Lanes (&v)[kVectorLanes]) {
  // Step by step, each vector's lanes are folded in half and two vectors share one: halves[j]
  // holds vectors 2j and 2j+1 in 8 lanes each (lane k + lane k + 8), quarters[j] vectors 4j .. 4j+3
  // in 4 lanes each, and so on.
  const auto add = [](FloatHalf a, FloatHalf b) { return a + b; };
  SplitLanes halves[8], quarters[4], eighths[2];
  for (int j = 0; j < 8; ++j) halves[j] = fold_halves(v[2 * j], v[2 * j + 1], add);
  for (int j = 0; j < 4; ++j) {  // lane k with k + 4
    quarters[j] = add_picked<LaneList<0, 1, 2, 3, 8, 9, 10, 11>, LaneList<4, 5, 6, 7, 12, 13, 14, 15>>(
        halves[2 * j], halves[2 * j + 1]);
  }
  for (int j = 0; j < 2; ++j) {  // lane k with k + 2
    eighths[j] = add_picked<LaneList<0, 1, 4, 5, 8, 9, 12, 13>, LaneList<2, 3, 6, 7, 10, 11, 14, 15>>(
        quarters[2 * j], quarters[2 * j + 1]);
  }
  // lane k with k + 1: one sum per vector
  const SplitLanes sums =
      add_picked<LaneList<0, 2, 4, 6, 8, 10, 12, 14>, LaneList<1, 3, 5, 7, 9, 11, 13, 15>>(eighths[0], eighths[1]);
  if constexpr (std::is_same_v<Lanes, WideLanes>) {
    return {__builtin_shufflevector(sums.lo, sums.hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)};
  } else {
    return sums;
  }
}

/// QuarterLanes' reductions, in the same order. Lane j with j + 8 (q[0] with q[2], q[1] with
/// q[3]), then with j + 4: four lanes left.
template <typename Fold>
TFM_ALWAYS_INLINE FloatQuarter fold_to_quarter(QuarterLanes v, Fold fold) {
  return fold(fold(v.q[0], v.q[2]), fold(v.q[1], v.q[3]));
}
/// 4 lanes folded to one: lane j with j + 2, then + 1.
template <typename Fold>
TFM_ALWAYS_INLINE float fold_four(FloatQuarter q, Fold fold) {
  q = fold(q, __builtin_shufflevector(q, q, 2, 3, 0, 1));
  q = fold(q, __builtin_shufflevector(q, q, 1, 0, 3, 2));
  return q[0];
}
TFM_ALWAYS_INLINE float max_of_lanes(QuarterLanes v) { return fold_four(fold_to_quarter(v, max_quarter), max_quarter); }
TFM_ALWAYS_INLINE float sum_of_lanes(QuarterLanes v) {
  const auto add = [](FloatQuarter a, FloatQuarter b) { return a + b; };
  return fold_four(fold_to_quarter(v, add), add);
}
TFM_ALWAYS_INLINE QuarterLanes sums_of_lanes(const QuarterLanes (&v)[kVectorLanes]) {
  const auto add = [](FloatQuarter a, FloatQuarter b) { return a + b; };
  QuarterLanes sums;
  for (int g = 0; g < 4; ++g) {  // vectors 4g .. 4g+3
    const FloatQuarter a = fold_to_quarter(v[4 * g], add), b = fold_to_quarter(v[4 * g + 1], add);
    const FloatQuarter c = fold_to_quarter(v[4 * g + 2], add), d = fold_to_quarter(v[4 * g + 3], add);
    // lane j with j + 2, two vectors per result, then j with j + 1
    const FloatQuarter ab = __builtin_shufflevector(a, b, 0, 1, 4, 5) + __builtin_shufflevector(a, b, 2, 3, 6, 7);
    const FloatQuarter cd = __builtin_shufflevector(c, d, 0, 1, 4, 5) + __builtin_shufflevector(c, d, 2, 3, 6, 7);
    sums.q[g] = __builtin_shufflevector(ab, cd, 0, 2, 4, 6) + __builtin_shufflevector(ab, cd, 1, 3, 5, 7);
  }
  return sums;
}

}  // namespace tfm
