#pragma once

// One tfm build runs on every x86-64 CPU, so it is compiled for the baseline (SSE2). Loops that
// carry a kernel's arithmetic are compiled again for AVX2 and AVX-512 (target_clones), and the
// loader picks the widest version the CPU has. TFM_VECTOR_CLONES marks such a function;
// TFM_ALWAYS_INLINE marks the helpers it calls, so they are compiled into each version.
// Elsewhere (clang, other architectures) both are empty: the same loops, baseline code.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TFM_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define TFM_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define TFM_VECTOR_CLONES
#define TFM_ALWAYS_INLINE inline
#endif

#include <cstdint>
#include <cstring>

namespace tfm {

/// Independent float partial results a kernel's loop keeps (one AVX-512 register's worth): the
/// compiler may not reorder a single float sum or maximum, but it vectorizes 16 of them.
constexpr int64_t kVectorLanes = 16;

/// The sum of `lanes` by halving: lanes j and j+8 first, then j and j+4, and so on. A few shuffles
/// and adds within one register, where a sum lane by lane is a chain of 16 dependent scalar adds.
TFM_ALWAYS_INLINE float sum_of_lanes(const float (&lanes)[kVectorLanes]) {
  static_assert(kVectorLanes == 16, "the shuffles below halve 16 lanes");
  using Vector = float __attribute__((vector_size(kVectorLanes * sizeof(float))));
  Vector v;
  std::memcpy(&v, lanes, sizeof v);
  v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
  v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  return v[0];
}

}  // namespace tfm
