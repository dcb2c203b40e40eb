#pragma once
#include <cstddef>

namespace tfm {

/// Copies `bytes` bytes with non-temporal stores where the CPU has them (x86-64's SSE2) and `to`
/// and `bytes` are multiples of 16; elsewhere memcpy. For destinations far larger than the caches,
/// such as a large batch's self-attention caches gathered into new buffers: ordinary stores first
/// read every destination line in and then evict lines still in use (BENCHMARKS.md has what the
/// gathers cost each way). Not for data read again soon from the cache. Non-temporal stores are weakly ordered: call
/// streaming_fence() before another thread (or a parallel region's caller) reads what was copied.
void streaming_copy(void* to, const void* from, size_t bytes);

/// Orders the calling thread's streaming copies before its later stores (x86's sfence).
void streaming_fence();

}  // namespace tfm
