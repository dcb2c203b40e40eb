#pragma once

namespace tfm {

/// Sets LibTorch's intra-op thread count. `threads` <= 0 means every core of the machine.
/// LibTorch's own default is not relied on: some builds default to a single thread.
/// Returns the count in force afterwards.
int configure_threads(int threads);

/// Cores the process may run on (sched affinity), at least 1.
int available_cores();

}  // namespace tfm
