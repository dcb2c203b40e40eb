#pragma once

namespace tfm {

/// oneDNN primitives cached at most (unless ONEDNN_PRIMITIVE_CACHE_CAPACITY is set).
constexpr int kOneDnnPrimitiveCacheCapacity = 64;

/// Bounds oneDNN's primitive cache before LibTorch first uses it. oneDNN keeps up to 1024
/// primitives by default, one per matmul shape, each with its own buffers; token-count batches
/// give every step new [batch, time] shapes, and under bf16 autocast (where linear layers run
/// through oneDNN) `tfm train` grew by ~10 GB an hour until the kernel killed it. A user's own
/// ONEDNN_PRIMITIVE_CACHE_CAPACITY wins. Call first thing in main().
void bound_onednn_primitive_cache();

}  // namespace tfm
