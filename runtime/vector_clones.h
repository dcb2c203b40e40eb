#pragma once

// One tfm build runs on every x86-64 CPU, so it is compiled for the baseline (SSE2). Loops that
// carry a kernel's arithmetic are compiled again for AVX2 and AVX-512 (target_clones), and the
// loader picks the widest version the CPU has. TFM_VECTOR_CLONES marks such a function;
// TFM_ALWAYS_INLINE marks the helpers it calls, so they are compiled into each version.
// Elsewhere (clang, other architectures) both are empty: the same loops, baseline code.
// TFM_LANE_KERNEL((head), body...) defines a kernel that computes in 16 float lanes
// (runtime/float_lanes.h) the same way, once per version: `body` sees `Lanes`, WideLanes in the
// AVX-512 version, SplitLanes in the AVX2 one and QuarterLanes in the baseline, for GCC compiles
// no one type well on all three.
// TFM_ONE_CLONE (bench/vector_clones.sh only): "v4", "v3" or "baseline" keeps that version alone
// (beside the baseline, for the loader), to measure what a CPU without AVX-512 or AVX2 runs.
// Under ThreadSanitizer (scripts/test --tsan) there are no clones: it instruments the resolvers
// target_clones makes, which the loader runs before the sanitizer has started.
#define TFM_UNPARENTHESIZED(...) __VA_ARGS__
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define TFM_ALWAYS_INLINE __attribute__((always_inline)) inline
#define TFM_LANE_VERSION(isa, LanesType, head, ...)       \
  __attribute__((target(isa))) TFM_UNPARENTHESIZED head { \
    using Lanes = LanesType;                              \
    __VA_ARGS__                                           \
  }
#if !defined(TFM_ONE_CLONE)
#define TFM_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define TFM_LANE_KERNEL(head, ...)                                  \
  TFM_LANE_VERSION("arch=x86-64-v4", WideLanes, head, __VA_ARGS__)  \
  TFM_LANE_VERSION("arch=x86-64-v3", SplitLanes, head, __VA_ARGS__) \
  TFM_LANE_VERSION("default", QuarterLanes, head, __VA_ARGS__)
#else
#define TFM_VECTOR_CLONES_v4 __attribute__((target_clones("arch=x86-64-v4", "default")))
#define TFM_VECTOR_CLONES_v3 __attribute__((target_clones("arch=x86-64-v3", "default")))
#define TFM_VECTOR_CLONES_baseline
#define TFM_LANE_KERNEL_v4(head, ...)                              \
  TFM_LANE_VERSION("arch=x86-64-v4", WideLanes, head, __VA_ARGS__) \
  TFM_LANE_VERSION("default", QuarterLanes, head, __VA_ARGS__)
#define TFM_LANE_KERNEL_v3(head, ...)                               \
  TFM_LANE_VERSION("arch=x86-64-v3", SplitLanes, head, __VA_ARGS__) \
  TFM_LANE_VERSION("default", QuarterLanes, head, __VA_ARGS__)
#define TFM_LANE_KERNEL_baseline(head, ...) \
  TFM_UNPARENTHESIZED head {                \
    using Lanes = QuarterLanes;             \
    __VA_ARGS__                             \
  }
#define TFM_CLONE_JOIN(a, b) a##b
#define TFM_CLONE_PICK(a, b) TFM_CLONE_JOIN(a, b)
#define TFM_VECTOR_CLONES TFM_CLONE_PICK(TFM_VECTOR_CLONES_, TFM_ONE_CLONE)
#define TFM_LANE_KERNEL TFM_CLONE_PICK(TFM_LANE_KERNEL_, TFM_ONE_CLONE)
#endif
#else
#define TFM_VECTOR_CLONES
#define TFM_ALWAYS_INLINE inline
#define TFM_LANE_KERNEL(head, ...) \
  TFM_UNPARENTHESIZED head {       \
    using Lanes = QuarterLanes;    \
    __VA_ARGS__                    \
  }
#endif

// Kernels written in one instruction set's intrinsics: for an instruction beyond x86-64-v4
// (AVX512-BF16's dot product, AVX512-VNNI's), or for AVX2's byte multiply-adds (x86-64-v3), each
// called only where the CPU has it (__builtin_cpu_supports) and defined only where
// TFM_EXTENSION_KERNELS is: GCC on x86-64, and not in TFM_ONE_CLONE builds, which measure the lane
// versions alone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TFM_ONE_CLONE)
#define TFM_EXTENSION_KERNELS 1
#define TFM_BF16_DOT_TARGET __attribute__((target("arch=x86-64-v4,avx512bf16")))
#define TFM_VNNI_TARGET __attribute__((target("arch=x86-64-v4,avx512vnni")))
#define TFM_AVX2_TARGET __attribute__((target("arch=x86-64-v3")))
#define TFM_AVX512_TARGET __attribute__((target("arch=x86-64-v4")))
#endif

#include <cstdint>

namespace tfm {

/// Independent float partial results a kernel's loop keeps (one AVX-512 register's worth): the
/// compiler may not reorder a single float sum or maximum, but it vectorizes 16 of them.
constexpr int64_t kVectorLanes = 16;

/// Asks the CPU to bring [data, data + bytes) into its caches: for reads its own prefetchers
/// cannot foresee (rows picked by index, positions a cache layer apart).
/// Locality: 3 into every level, 2 into the second level and beyond (for reads further ahead).
template <int Locality = 3>
TFM_ALWAYS_INLINE void prefetch_bytes(const void* data, int64_t bytes) {
  const char* p = static_cast<const char*>(data);
  for (int64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(p + offset, 0, Locality);
}

}  // namespace tfm
