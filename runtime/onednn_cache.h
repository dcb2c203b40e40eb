#pragma once

namespace tfm {

/// oneDNN primitives cached at most (unless ONEDNN_PRIMITIVE_CACHE_CAPACITY is set).
constexpr int kOneDnnPrimitiveCacheCapacity = 64;

/// The bound on a CPU with AMX tiles (cpu_has_bf16_tiles), whose bfloat16 products pad their rows
/// to a few counts (PackedWeight::padded_rows): ~30 counts x ~6 weight shapes must stay cached, each
/// compile costing ~5-10 ms. 64 entries recompiled ~150 of them per 1000 sentences (BENCHMARKS.md).
constexpr int kTilesPrimitiveCacheCapacity = 256;

/// Bounds oneDNN's primitive cache before LibTorch first uses it (kTilesPrimitiveCacheCapacity on a
/// CPU with AMX tiles). oneDNN keeps up to 1024
/// primitives by default, one per matmul shape, each with its own buffers; token-count batches
/// give every step new [batch, time] shapes, and under bf16 autocast (where linear layers run
/// through oneDNN) `tfm train` grew by ~10 GB an hour until the kernel killed it. A user's own
/// ONEDNN_PRIMITIVE_CACHE_CAPACITY wins. Call first thing in main().
void bound_onednn_primitive_cache();

/// oneDNN primitives `tfm serve` caches: with its products padded to a few row counts
/// (PackedWeight::set_row_padding), ~20 row counts x 5 weight shapes, and every miss a JIT compile.
constexpr int kServingPrimitiveCacheCapacity = 256;

/// Sets oneDNN's cache to `capacity` primitives unless the user set ONEDNN_PRIMITIVE_CACHE_CAPACITY.
/// oneDNN reads it once, at its first primitive: call before anything is loaded.
void widen_onednn_primitive_cache(int capacity);

/// oneDNN primitives bf16 training on the CPU caches: its products' row counts are bucketed (at
/// most 16 counts per doubling, model/bucketed_rows.h), so a run on Multi30k meets ~450 shapes
/// (~30 counts x ~15 products) and keeps them all; each holds ~1 MB (BENCHMARKS.md).
constexpr int kTrainingPrimitiveCacheCapacity = 1024;

/// Entries of ideep's computation cache kept (unless LRU_CACHE_CAPACITY is set).
constexpr int kIdeepComputationCacheCapacity = 32;

/// Bounds ideep's computation cache (LibTorch's layer over oneDNN: a primitive and its buffers per
/// matmul shape and packed weight, 1024 by default). Decoding meets a new row count at nearly every
/// step as sentences finish, so the cache fills with shapes seen once: in bfloat16 it held 450 MiB
/// at batches of 32 sentences, for no speed. Training validates with a freshly packed copy of the
/// model each time, and the entries kept every copy alive: a 60-minute bf16 run grew to 23 GB
/// (BENCHMARKS.md). The bound costs training no speed. Call first thing in main().
void bound_ideep_computation_cache();

}  // namespace tfm
