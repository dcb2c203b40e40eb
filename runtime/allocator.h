#pragma once

namespace tfm {

/// jemalloc's options for tfm and the benchmarks that time what it runs, as `malloc_conf` (read by
/// jemalloc when it is linked, ignored otherwise): keep freed memory instead of returning it to
/// the OS, where re-faulting pages costs ~10 us per 4 KiB on virtual machines and made training
/// steps several times slower (BENCHMARKS.md, allocator comparison). Tensors over 8 MiB come from
/// the ordinary arenas, not a separate one (oversize_threshold:0): with nothing ever returned,
/// that arena's kept pages were not reused well, and the peak was 24% higher in bf16 training and
/// 9-14% in float32 and bf16 decoding (BENCHMARKS.md, "jemalloc's arena for large tensors").
inline constexpr char kJemallocOptions[] =
    "background_thread:false,dirty_decay_ms:-1,muzzy_decay_ms:-1,oversize_threshold:0";

/// tfm links jemalloc with decay off (app/main.cpp): freed memory stays with the process, because
/// re-faulting pages costs ~10 us per 4 KiB on these virtual machines. That suits decoding a file; a
/// command that frees a transient peak (e.g. a training checkpoint's optimizer state read while
/// loading a model to translate) hands those pages back with this, and PagePool::shared()'s free
/// regions too. Without jemalloc only the latter. Returns whether jemalloc released memory.
bool release_free_memory();

/// Lets jemalloc hand pages freed `milliseconds` ago back to the OS from now on, in every arena (a
/// server whose batches change shape with its load: with decay off each size class keeps its own
/// peak, and the process holds the union of them). PagePool::shared() does the same with its free
/// regions. Without jemalloc only the latter; returns whether jemalloc's setting took.
bool return_freed_memory_after(long milliseconds);

/// Lets jemalloc mark pages freed `milliseconds` ago as free for the kernel to take (MADV_FREE:
/// the kernel reclaims them only under memory pressure, and until then they are reused without a
/// fault), never unmapping them outright. Training sets this: with decay off, jemalloc joins freed
/// neighbours only when it purges, so a base-size model's batches of ever-changing shapes kept
/// leaving pieces too small for the next batch's tensors and the process grew until the kernel
/// killed it (BENCHMARKS.md, "Base-size training ran out of memory"). Without jemalloc it does
/// nothing; returns whether the setting took.
bool lend_freed_memory_to_the_kernel_after(long milliseconds);

/// The jemalloc arena the calling thread allocates from; -1 without jemalloc.
int this_thread_arena();

/// Makes the calling thread allocate from `arena` (this_thread_arena() of another thread), so that
/// threads that take turns with the same kinds of tensors share one pool of freed pages: with decay
/// off each arena keeps the pages of its own peak, and two decoding workers with an arena each held
/// the sum of their peaks instead of the peak of their sum (BENCHMARKS.md). Without jemalloc or
/// with a negative `arena` it does nothing; returns whether the setting took.
bool use_arena(int arena);

}  // namespace tfm
