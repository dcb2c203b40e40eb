#include "runtime/task_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include <ATen/Parallel.h>

#include "runtime/threads.h"

namespace tfm {
namespace {

TEST(TaskThread, RunsEachTaskOnOneOtherThread) {
  TaskThread worker;
  std::thread::id first, second;
  worker.start([&] { first = std::this_thread::get_id(); });
  worker.wait();
  worker.start([&] { second = std::this_thread::get_id(); });
  worker.wait();
  EXPECT_NE(first, std::this_thread::get_id());
  EXPECT_EQ(first, second);  // one long-lived thread, not one per task
}

TEST(TaskThread, WaitRethrowsTheTasksErrorOnce) {
  TaskThread worker;
  worker.start([] { throw std::runtime_error("part 1 ran out of memory"); });
  try {
    worker.wait();
    FAIL() << "wait() returned";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 1 ran out of memory");
  }
  worker.wait();  // the error was handed over: nothing left to throw
  int ran = 0;
  worker.start([&] { ran = 1; });
  worker.wait();
  EXPECT_EQ(ran, 1);
}

TEST(TaskThread, OneTaskAtATime) {
  TaskThread worker;
  std::atomic<bool> release{false};
  worker.start([&] {
    while (!release) std::this_thread::yield();
  });
  EXPECT_THROW(worker.start([] {}), std::logic_error);
  release = true;
  worker.wait();
}

TEST(TaskThread, EndsWithATaskInHand) {
  std::atomic<int> ran{0};
  {
    TaskThread worker;
    worker.start([&] { ran = 1; });
  }  // the destructor waits for the task, then joins
  EXPECT_EQ(ran, 1);
}

TEST(Threads, SetThisThreadTeamLeavesOtherThreadsAlone) {
  const int before = at::get_num_threads();
  TaskThread worker;
  int inside = 0, after_a_loop = 0;
  worker.start([&] {
    inside = set_this_thread_team(1);
    at::parallel_for(0, 1 << 20, 1, [](int64_t, int64_t) {});  // a first loop does not reset it
    after_a_loop = at::get_num_threads();
  });
  worker.wait();
  EXPECT_EQ(inside, 1);
  EXPECT_EQ(after_a_loop, 1);
  EXPECT_EQ(at::get_num_threads(), before);
}

TEST(Threads, CallingThreadOnlyRunsLoopsHereThenRestoresTheTeam) {
  const int before = at::get_num_threads();
  set_this_thread_team(2);  // a team to leave, even on one core
  {
    const CallingThreadOnly one_thread;
    EXPECT_EQ(at::get_num_threads(), 1);
    std::atomic<bool> elsewhere{false};
    const auto here = std::this_thread::get_id();
    at::parallel_for(0, 1 << 20, 1, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != here) elsewhere = true;
    });
    EXPECT_FALSE(elsewhere) << "a chunk ran on another thread";
  }
  EXPECT_EQ(at::get_num_threads(), 2);
  set_this_thread_team(before);
}

}  // namespace
}  // namespace tfm
