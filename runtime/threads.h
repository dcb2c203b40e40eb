#pragma once

namespace tfm {

/// The most threads tfm is asked to run side by side (--threads, and --sub-batches' one thread a
/// part): far more than useful, and far fewer than a system refuses to start for one process.
constexpr int kMostThreads = 1024;

/// Sets LibTorch's intra-op thread count. `threads` <= 0 means default_threads().
/// LibTorch's own default is not relied on: some builds default to a single thread.
/// Returns the count in force afterwards.
int configure_threads(int threads);

/// Sets the team size of the parallel regions the calling thread starts (LibTorch's intra-op
/// loops and the products they call), leaving other threads, and the process-wide count new
/// threads start from, as they are. Cheap enough to call per update. Returns the count in force
/// on this thread afterwards, which stays unchanged in a build without OpenMP.
int set_this_thread_team(int threads);

/// While alive, the parallel loops the calling thread starts run on it alone (LibTorch's and the
/// products'); then the thread's team size is restored. For work too small to be worth waking
/// another thread for: a parallel region costs microseconds whatever it holds.
class CallingThreadOnly {
 public:
  CallingThreadOnly();
  ~CallingThreadOnly();
  CallingThreadOnly(const CallingThreadOnly&) = delete;
  CallingThreadOnly& operator=(const CallingThreadOnly&) = delete;

 private:
  int previous_;
};

/// The cores this process may use, shared evenly with the other processes of a multi-process
/// run on this node (torchrun's LOCAL_WORLD_SIZE); at least 1.
int default_threads();

/// Cores the process may run on (sched affinity), at least 1.
int available_cores();

}  // namespace tfm
