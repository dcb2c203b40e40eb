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
/// worker has stopped. A worker that finds no job left hands its cores to those still running,
/// which take them where their jobs call adopt_idle_cores().
void run_parallel_jobs(size_t jobs, const std::vector<int>& teams, const std::function<void(size_t, size_t)>& job);

/// Inside a job of run_parallel_jobs: adds to the calling worker's team the cores of workers that
/// have run out of jobs (and not yet been taken by another), so that the last jobs do not run on
/// a share of the cores while the rest sit idle. For long jobs to call between steps (a search's),
/// outside any parallel region; elsewhere, and inside a held StepTeam (whose members are fixed),
/// it changes nothing. Returns the calling thread's team size afterwards.
int adopt_idle_cores();

}  // namespace tfm
