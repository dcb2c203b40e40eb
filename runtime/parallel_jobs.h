#pragma once
#include <cstddef>
#include <functional>
#include <vector>

namespace tfm {

/// How `threads` cores are shared among `workers` threads that each run jobs of their own:
/// worker w's parallel loops get threads / workers cores, the first threads % workers one more
/// (every worker at least one).
std::vector<int> worker_teams(int workers, int threads);

/// Runs job(index, worker) for every index in [0, jobs) on `workers` threads at once, the calling
/// thread being worker 0, each taking the next index in order as it finishes one. Worker w's
/// parallel loops (LibTorch's and the products') run on teams[w] cores; the calling thread's team
/// is restored afterwards. Each worker thread runs in LibTorch's inference mode when the caller
/// does, and allocates from the caller's jemalloc arena (runtime/allocator.h: use_arena). The
/// first exception a job throws stops the taking of new jobs and is rethrown here once every
/// worker has stopped.
void run_parallel_jobs(size_t jobs, const std::vector<int>& teams, const std::function<void(size_t, size_t)>& job);

}  // namespace tfm
