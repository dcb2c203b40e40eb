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

namespace tfm {

/// Independent float partial results a kernel's loop keeps (one AVX-512 register's worth): the
/// compiler may not reorder a single float sum or maximum, but it vectorizes 16 of them.
constexpr int64_t kVectorLanes = 16;

}  // namespace tfm
