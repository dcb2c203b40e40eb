#pragma once

namespace tfm {

/// tfm links jemalloc with decay off (app/main.cpp): freed memory stays with the process, because
/// re-faulting pages costs ~10 us per 4 KiB on these virtual machines. That suits training, whose
/// heap is the same every step; a command that frees a transient peak (e.g. a training checkpoint's
/// optimizer state read while loading a model to translate) hands those pages back with this.
/// Without jemalloc it does nothing. Returns whether memory was released.
bool release_free_memory();

/// Lets jemalloc hand pages freed `milliseconds` ago back to the OS from now on, in every arena (a
/// server whose batches change shape with its load: with decay off each size class keeps its own
/// peak, and the process holds the union of them). Without jemalloc it does nothing; returns
/// whether the setting took.
bool return_freed_memory_after(long milliseconds);

}  // namespace tfm
