#include "runtime/parallel_jobs.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "runtime/allocator.h"
#include "runtime/step_team.h"
#include "runtime/threads.h"

namespace tfm {
namespace {

/// The calling worker's run (the cores of its workers that have run out of jobs, not yet
/// adopted) and team size: set while it runs jobs, else nullptr and 0.
thread_local std::atomic<int>* this_thread_idle_cores = nullptr;
thread_local int this_thread_cores = 0;

}  // namespace

std::vector<int> worker_teams(int workers, int threads) {
  workers = std::max(1, workers);
  threads = std::max(workers, threads);
  std::vector<int> teams(static_cast<size_t>(workers), threads / workers);
  for (int w = 0; w < threads % workers; ++w) ++teams[static_cast<size_t>(w)];
  return teams;
}

void run_parallel_jobs(size_t jobs, const std::vector<int>& teams, const std::function<void(size_t, size_t)>& job) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  std::atomic<int> idle{0};  // cores of workers out of jobs
  const bool inference = c10::InferenceMode::is_enabled();
  auto work = [&](size_t worker) {
    std::atomic<int>* const outer_idle = this_thread_idle_cores;  // a job may run jobs of its own
    const int outer_cores = this_thread_cores;
    this_thread_idle_cores = &idle;
    this_thread_cores = teams[worker];
    try {
      for (size_t index = next++; index < jobs && !failed; index = next++) job(index, worker);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      failed = true;
    }
    idle += this_thread_cores;  // no job is left to take: the workers still running may use them
    this_thread_idle_cores = outer_idle;
    this_thread_cores = outer_cores;
  };
  const int caller_team = at::get_num_threads();
  const int caller_arena = this_thread_arena();
  std::vector<std::thread> helpers;
  try {
    for (size_t worker = 1; worker < teams.size(); ++worker) {
      helpers.emplace_back([&, worker] {
        // Inference mode, the team size and the allocator's arena belong to a thread: each worker
        // takes the caller's mode and arena (the workers' tensors share one pool of freed pages)
        // and its own share of the cores.
        const c10::InferenceMode mode(inference);
        use_arena(caller_arena);
        set_this_thread_team(teams[worker]);
        work(worker);
      });
    }
  } catch (...) {  // no thread to be had: those started finish what they took, then it is rethrown
    failed = true;
    for (auto& helper : helpers) helper.join();
    throw;
  }
  set_this_thread_team(teams.empty() ? caller_team : teams.front());
  work(0);
  for (auto& helper : helpers) helper.join();
  set_this_thread_team(caller_team);
  if (first_error) std::rethrow_exception(first_error);
}

void run_costliest_first(std::vector<CostedJob> jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const CostedJob& a, const CostedJob& b) { return a.cost > b.cost; });
  const int threads = at::get_num_threads();
  const int workers = static_cast<int>(std::min<size_t>(jobs.size(), static_cast<size_t>(std::max(1, threads))));
  run_parallel_jobs(jobs.size(), worker_teams(workers, threads), [&](size_t index, size_t) { jobs[index].run(); });
}

int adopt_idle_cores() {
  std::atomic<int>* const idle = this_thread_idle_cores;
  if (idle == nullptr || idle->load(std::memory_order_relaxed) == 0 || StepTeam::of_this_thread() != nullptr)
    return at::get_num_threads();
  const int taken = idle->exchange(0);
  if (taken == 0) return at::get_num_threads();  // another worker took them first
  this_thread_cores += taken;
  return set_this_thread_team(this_thread_cores);
}

}  // namespace tfm
