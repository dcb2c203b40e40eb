#include "runtime/parallel_jobs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "runtime/threads.h"

namespace tfm {
namespace {

TEST(ParallelJobs, WorkerTeamsShareTheCoresEvenlyAndGiveEachOne) {
  EXPECT_EQ(worker_teams(2, 2), (std::vector<int>{1, 1}));
  EXPECT_EQ(worker_teams(3, 8), (std::vector<int>{3, 3, 2}));
  EXPECT_EQ(worker_teams(1, 4), (std::vector<int>{4}));
  EXPECT_EQ(worker_teams(3, 1), (std::vector<int>{1, 1, 1}));  // never a worker without a core
  EXPECT_EQ(worker_teams(0, 4), (std::vector<int>{4}));
}

TEST(ParallelJobs, EveryJobRunsOnceOnItsWorkersTeamInTheCallersMode) {
  const int caller_team = at::get_num_threads();
  const std::vector<int> teams = {2, 1, 3};
  std::vector<std::atomic<int>> runs(40);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  bool every_team_right = true, every_mode_right = true;
  {
    const c10::InferenceMode inference;
    run_parallel_jobs(runs.size(), teams, [&](size_t job, size_t worker) {
      ++runs[job];
      const std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
      every_team_right = every_team_right && worker < teams.size() && at::get_num_threads() == teams[worker];
      every_mode_right = every_mode_right && c10::InferenceMode::is_enabled();
    });
  }
  for (size_t job = 0; job < runs.size(); ++job) EXPECT_EQ(runs[job].load(), 1) << "job " << job;
  EXPECT_TRUE(every_team_right);
  EXPECT_TRUE(every_mode_right);
  EXPECT_LE(threads.size(), teams.size());
  EXPECT_EQ(at::get_num_threads(), caller_team);  // restored
}

TEST(ParallelJobs, AnErrorStopsTheTakingOfJobsAndIsRethrown) {
  // One worker: the jobs after the failing one are never taken.
  std::atomic<int> started{0};
  auto fail_at_3 = [&](size_t job, size_t /*worker*/) {
    ++started;
    if (job == 3) throw std::runtime_error("batch 3 ran out of memory");
  };
  try {
    run_parallel_jobs(10, {1}, fail_at_3);
    FAIL() << "no error came back";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "batch 3 ran out of memory");
  }
  EXPECT_EQ(started.load(), 4);
  // Two: the error comes back whichever thread met it.
  EXPECT_THROW(run_parallel_jobs(10, {1, 1}, fail_at_3), std::runtime_error);
}

TEST(ParallelJobs, AWorkerOutOfJobsHandsItsCoresToOneStillRunning) {
  const int caller_team = at::get_num_threads();
  if (set_this_thread_team(caller_team + 1) != caller_team + 1) {
    set_this_thread_team(caller_team);
    GTEST_SKIP() << "LibTorch without OpenMP: a thread's team size cannot change";
  }
  set_this_thread_team(caller_team);
  // Two workers of one core each, two jobs. The job taken first asks for idle cores until it has
  // the other worker's: that worker hands it over only once it has run the other job and found
  // none left, so the wait ends on that condition, whichever worker took which job. (The bound
  // only turns a worker that never hands over into a failure instead of a hang.)
  std::atomic<bool> first_taken{false};
  int adopted = 0, team_seen = 0;
  run_parallel_jobs(2, {1, 1}, [&](size_t /*job*/, size_t /*worker*/) {
    if (first_taken.exchange(true)) return;
    EXPECT_EQ(at::get_num_threads(), 1);
    int team = adopt_idle_cores();
    for (int tries = 0; team < 2 && tries < 10'000'000; ++tries) {
      std::this_thread::yield();
      team = adopt_idle_cores();
    }
    adopted = team;
    team_seen = at::get_num_threads();
    EXPECT_EQ(adopt_idle_cores(), 2);  // nothing more to take: no change
  });
  EXPECT_EQ(adopted, 2);
  EXPECT_EQ(team_seen, 2);
  EXPECT_EQ(at::get_num_threads(), caller_team);  // restored
}

TEST(ParallelJobs, AdoptingIdleCoresOutsideJobsChangesNothing) {
  const int team = at::get_num_threads();
  EXPECT_EQ(adopt_idle_cores(), team);
  run_parallel_jobs(1, {1}, [](size_t, size_t) {});  // its worker's cores are nobody's to take now
  EXPECT_EQ(adopt_idle_cores(), team);
  EXPECT_EQ(at::get_num_threads(), team);
}

TEST(ParallelJobs, NoJobsRunsNothing) {
  bool ran = false;
  run_parallel_jobs(0, {1, 1}, [&](size_t, size_t) { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(CostliestFirst, RunsTheJobsInOrderOfCostOnOneCore) {
  const int team = at::get_num_threads();
  set_this_thread_team(1);
  std::vector<int> order;
  std::vector<CostedJob> jobs;
  for (const int cost : {3, 10, 1, 10, 7}) jobs.push_back({cost, [&order, cost] { order.push_back(cost); }});
  run_costliest_first(std::move(jobs));
  set_this_thread_team(team);
  EXPECT_EQ(order, (std::vector<int>{10, 10, 7, 3, 1}));
}

TEST(CostliestFirst, GivesEachOfManyJobsOneCoreAndASingleJobThemAll) {
  const int team = at::get_num_threads();
  set_this_thread_team(3);
  std::vector<std::atomic<int>> runs(20);
  std::atomic<bool> every_job_on_one_core{true};
  std::vector<CostedJob> jobs;
  for (size_t job = 0; job < runs.size(); ++job) {
    jobs.push_back({static_cast<int64_t>(job), [&, job] {
                      ++runs[job];
                      if (at::get_num_threads() != 1) every_job_on_one_core = false;
                    }});
  }
  run_costliest_first(std::move(jobs));
  for (size_t job = 0; job < runs.size(); ++job) EXPECT_EQ(runs[job].load(), 1) << "job " << job;
  EXPECT_TRUE(every_job_on_one_core);
  EXPECT_EQ(at::get_num_threads(), 3);  // restored
  int single_job_team = 0;
  run_costliest_first({{1, [&] { single_job_team = at::get_num_threads(); }}});
  EXPECT_EQ(single_job_team, 3);
  run_costliest_first({});  // nothing to run
  set_this_thread_team(team);
}

}  // namespace
}  // namespace tfm
