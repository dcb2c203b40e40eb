#pragma once
#include <cstddef>

namespace tfm {

/// How `tfm serve` shares its decoding cores among its decoding threads: the main one (which
/// BatchingQueue::run() runs on) and `workers - 1` helpers (run_helper()).
///
/// Each helper decodes on `helper_threads()`. Where that is one thread, a helper forms no OpenMP
/// team, and the main thread takes the cores of every helper that is idle: a lone request then
/// decodes on all the cores, as in `tfm translate`. Where helpers have teams of their own, the main
/// thread keeps its even share: a team as large as every core beside them would make libgomp count
/// more threads than cores, and all of its teams would then sleep between parallel regions.
class WorkerCores {
 public:
  WorkerCores(int cores, int workers);
  int helper_threads() const { return helper_threads_; }
  /// The main thread's threads while `busy_helpers` helpers decode.
  int main_threads(size_t busy_helpers) const;
  /// The main thread's threads while every helper idles.
  int main_threads_alone() const { return main_threads(0); }

 private:
  int cores_;
  int helper_threads_;
};

}  // namespace tfm
