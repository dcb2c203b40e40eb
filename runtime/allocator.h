#pragma once

namespace tfm {

/// tfm links jemalloc with decay off (app/main.cpp): freed memory stays with the process, because
/// re-faulting pages costs ~10 us per 4 KiB on these virtual machines. That suits training, whose
/// heap is the same every step; a command that frees a transient peak (e.g. a training checkpoint's
/// optimizer state read while loading a model to translate) hands those pages back with this.
/// Without jemalloc it does nothing. Returns whether memory was released.
bool release_free_memory();

}  // namespace tfm
