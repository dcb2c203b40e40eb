#pragma once
#include <cstddef>
#include <cstdint>
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

/// A piece of work and what it costs, in any unit the jobs beside it share (bytes, say).
struct CostedJob {
  int64_t cost = 0;
  std::function<void()> run;
};

/// Runs every job once through run_parallel_jobs, one worker of one core per LibTorch thread (a
/// single job gets them all), the costliest first so that the last to end are small ones: for
/// independent pieces of serial work, such as preparing a model's layers at load.
void run_costliest_first(std::vector<CostedJob> jobs);

}  // namespace tfm
