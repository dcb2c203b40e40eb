#include "runtime/threads.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <ATen/Parallel.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <torch/utils.h>

namespace tfm {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

int default_threads() {
  // Several processes on one node (torchrun sets LOCAL_WORLD_SIZE) share its cores, as torchrun
  // itself would have them do: otherwise each would run a thread per core, all contending.
  int local_processes = 1;
  if (const char* text = std::getenv("LOCAL_WORLD_SIZE"); text != nullptr)
    local_processes = std::max(1, std::atoi(text));
  return std::max(1, available_cores() / local_processes);
}

namespace {

/// A thread's first parallel loop sets its OpenMP count from the process-wide one that the last
/// set_num_threads on any thread left, once per library that inlines at::parallel_for (this
/// binary and LibTorch each keep their own flag). Taking both first steps before setting a count
/// keeps it: else a one-thread `tfm serve` helper could later take two and form a second team.
void take_first_parallel_steps() {
  at::internal::lazy_init_num_threads();
  at::get_num_threads();
}

}  // namespace

int configure_threads(int threads) {
  const int wanted = threads > 0 ? threads : default_threads();
  take_first_parallel_steps();
  torch::set_num_threads(wanted);
  return torch::get_num_threads();
}

int set_this_thread_team(int threads) {
  take_first_parallel_steps();
#ifdef _OPENMP
  omp_set_num_threads(std::max(1, threads));
#else
  (void)threads;
#endif
  return at::get_num_threads();
}

CallingThreadOnly::CallingThreadOnly() : previous_(at::get_num_threads()) {
  if (previous_ > 1) set_this_thread_team(1);
}

CallingThreadOnly::~CallingThreadOnly() {
  if (previous_ > 1) set_this_thread_team(previous_);
}

}  // namespace tfm
