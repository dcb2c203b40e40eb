#pragma once

namespace tfm {

/// Sets LibTorch's intra-op thread count. `threads` <= 0 means default_threads().
/// LibTorch's own default is not relied on: some builds default to a single thread.
/// Returns the count in force afterwards.
int configure_threads(int threads);

/// The cores this process may use, shared evenly with the other processes of a multi-process
/// run on this node (torchrun's LOCAL_WORLD_SIZE); at least 1.
int default_threads();

/// Cores the process may run on (sched affinity), at least 1.
int available_cores();

}  // namespace tfm
