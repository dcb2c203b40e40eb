// StepTeam: LibTorch's threads held for a search, serving its loops and reading ahead between them.
#include "runtime/step_team.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>

#include "runtime/parallel_for.h"
#include "runtime/threads.h"

namespace tfm {
namespace {

/// Runs `body` with the calling thread's parallel loops on `threads` threads, then restores them.
template <typename Body>
void with_threads(int threads, Body body) {
  const int before = at::get_num_threads();
  set_this_thread_team(threads);
  body();
  set_this_thread_team(before);
}

/// The [begin, end) shares `loop` gives a loop over [first, last) at `grain`, in order.
template <typename Loop>
std::set<std::pair<int64_t, int64_t>> shares_of(Loop loop, int64_t first, int64_t last, int64_t grain) {
  std::mutex mutex;
  std::set<std::pair<int64_t, int64_t>> shares;
  loop(first, last, grain, [&](int64_t begin, int64_t end) {
    const std::lock_guard<std::mutex> lock(mutex);
    shares.insert({begin, end});
  });
  return shares;
}

TEST(StepTeam, LoopsSplitAsLibTorchsAndRunOnEveryMember) {
  with_threads(2, [] {
    const auto libtorch = [](int64_t first, int64_t last, int64_t grain, const auto& f) {  // at::parallel_for
      parallel_for(first, last, grain, f);
    };
    const auto team = [](int64_t first, int64_t last, int64_t grain, const auto& f) {
      team_parallel_for(first, last, grain, f);
    };
    std::vector<std::set<std::pair<int64_t, int64_t>>> expected;
    const std::vector<std::array<int64_t, 3>> loops = {{0, 125, 1}, {3, 10, 2}, {0, 7, 7}, {5, 6, 1}, {0, 100, 40}};
    for (const auto& [first, last, grain] : loops) expected.push_back(shares_of(libtorch, first, last, grain));
    bool held = false;
    std::set<std::thread::id> threads;
    std::vector<std::atomic<int>> runs(125);
    StepTeam::hold([&] {
      StepTeam* team_held = StepTeam::of_this_thread();
      ASSERT_NE(team_held, nullptr);
      held = team_held->members() == 2;
      for (size_t i = 0; i < loops.size(); ++i) {
        const auto& [first, last, grain] = loops[i];
        EXPECT_EQ(shares_of(team, first, last, grain), expected[i]) << "loop " << i;
      }
      std::mutex mutex;
      std::atomic<bool> other_began{false};
      team_parallel_for(0, 125, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++runs[static_cast<size_t>(i)];
        {
          const std::lock_guard<std::mutex> lock(mutex);
          threads.insert(std::this_thread::get_id());
        }
        // The calling thread's share waits for the other to begin, so a member must take it: the
        // calling thread runs a share no member has taken only once its own is done.
        if (begin == 0) {
          while (!other_began.load()) std::this_thread::yield();
        } else {
          other_began = true;
        }
      });
    });
    EXPECT_TRUE(held);
    EXPECT_EQ(threads.size(), 2U);  // the calling thread and one other
    for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "index " << i;
    EXPECT_EQ(StepTeam::of_this_thread(), nullptr);  // released
  });
}

TEST(StepTeam, MembersAsleepWakeForTheNextLoop) {
  with_threads(2, [] {
    StepTeam::hold([] {
      StepTeam* team = StepTeam::of_this_thread();
      ASSERT_NE(team, nullptr);
      // With no loop posted, the other member stops pausing and sleeps.
      while (team->members_asleep() < team->members() - 1) std::this_thread::yield();
      // The posted loop wakes it: the calling thread's share waits for the other's to begin.
      std::atomic<bool> other_began{false};
      std::atomic<int64_t> covered{0};
      team_parallel_for(0, 10, 1, [&](int64_t begin, int64_t end) {
        covered += end - begin;
        if (begin == 0) {
          while (!other_began.load()) std::this_thread::yield();
        } else {
          other_began = true;
        }
      });
      EXPECT_EQ(covered.load(), 10);
    });
  });
}

TEST(StepTeam, TheCallingThreadRunsTheSharesNoMemberHasTaken) {
  // Loops with nothing to do: the calling thread's own share is done before a member looks, now
  // and then, and the loop must not wait for it. Which thread runs a share does not change what
  // the loop does: every index once.
  with_threads(3, [] {
    StepTeam::hold([] {
      const std::thread::id caller = std::this_thread::get_id();
      bool took_anothers = false;
      for (int loop = 0; loop < 1000000 && !took_anothers; ++loop) {
        std::array<std::atomic<int>, 3> runs{};
        std::atomic<bool> by_caller{false};
        team_parallel_for(0, 3, 1, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) ++runs[static_cast<size_t>(i)];
          if (begin > 0 && std::this_thread::get_id() == caller) by_caller = true;
        });
        for (const auto& run : runs) ASSERT_EQ(run.load(), 1) << "loop " << loop;
        took_anothers = by_caller.load();
      }
      EXPECT_TRUE(took_anothers);
    });
  });
}

TEST(StepTeam, OneThreadOrATeamAlreadyRunsTheBodyAlone) {
  with_threads(1, [] {
    bool ran = false;
    StepTeam::hold([&] {
      ran = true;
      EXPECT_EQ(StepTeam::of_this_thread(), nullptr);
      int64_t covered = 0;
      team_parallel_for(0, 10, 1, [&](int64_t begin, int64_t end) { covered += end - begin; });
      EXPECT_EQ(covered, 10);
    });
    EXPECT_TRUE(ran);
  });
  with_threads(2, [] {
    StepTeam::hold([] {
      StepTeam* outer = StepTeam::of_this_thread();
      bool inner_ran = false;
      StepTeam::hold([&] {
        inner_ran = true;
        EXPECT_EQ(StepTeam::of_this_thread(), outer);
      });
      EXPECT_TRUE(inner_ran);
    });
  });
}

TEST(StepTeam, ExceptionsInSharesAndInTheBodyReachTheCaller) {
  with_threads(2, [] {
    StepTeam::hold([] {
      // Another member's share throws: the loop rethrows it, and the team serves the next loop.
      EXPECT_THROW(team_parallel_for(0, 10, 1,
                                     [](int64_t begin, int64_t) {
                                       if (begin > 0) throw std::runtime_error("member's share");
                                     }),
                   std::runtime_error);
      EXPECT_THROW(team_parallel_for(0, 10, 1,
                                     [](int64_t begin, int64_t) {
                                       if (begin == 0) throw std::runtime_error("caller's share");
                                     }),
                   std::runtime_error);
      std::atomic<int64_t> covered{0};
      team_parallel_for(0, 10, 1, [&](int64_t begin, int64_t end) { covered += end - begin; });
      EXPECT_EQ(covered.load(), 10);
    });
    EXPECT_THROW(StepTeam::hold([] { throw std::invalid_argument("body"); }), std::invalid_argument);
    // The members were released: a new team forms and serves.
    std::atomic<int64_t> covered{0};
    StepTeam::hold([&] { team_parallel_for(0, 10, 1, [&](int64_t begin, int64_t end) { covered += end - begin; }); });
    EXPECT_EQ(covered.load(), 10);
  });
}

TEST(StepTeam, ReadsAheadWithinTheBytesOfTheLoopThatFollowed) {
  // Two "weights" each ending at an inaccessible page: a read past a loop's bytes faults.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t size = 64 * page;
  std::vector<char*> mapped;
  std::vector<MemoryRange> weights;
  for (int i = 0; i < 2; ++i) {
    void* at = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(at, MAP_FAILED);
    auto* bytes = static_cast<char*>(at);
    ASSERT_EQ(mprotect(bytes + size, page, PROT_NONE), 0);
    mapped.push_back(bytes);
    weights.push_back({bytes + 13, static_cast<int64_t>(size - 13)});  // not line-aligned, as no weight need be
  }
  with_threads(2, [&] {
    StepTeam::hold([&] {
      std::atomic<int64_t> sum{0};
      for (int step = 0; step < 50; ++step) {
        for (const auto& weight : weights) {
          team_parallel_for(
              0, 8, 1,
              [&](int64_t begin, int64_t end) {
                const auto* bytes = static_cast<const char*>(weight.data);
                for (int64_t i = begin; i < end; ++i) sum += bytes[i * (weight.size / 8)];
              },
              weight);
          // Serial work between the loops, when the other member reads the next one ahead.
          volatile int64_t spin = 0;
          for (int i = 0; i < 20000; ++i) spin = spin + i;
        }
      }
      EXPECT_EQ(sum.load(), 0);
    });
  });
  for (char* bytes : mapped) munmap(bytes, size + page);
}

TEST(StepTeam, SuccessorsLearnWhichLoopFollowsWhichAcrossHolds) {
  std::array<char, 3> bytes{};
  const MemoryRange a{&bytes[0], 1}, b{&bytes[1], 1}, c{&bytes[2], 1};
  StepTeam::Successors successors;
  EXPECT_EQ(successors.learn(a).data, nullptr);  // nothing followed a yet
  EXPECT_EQ(successors.learn(b).data, nullptr);
  EXPECT_EQ(successors.learn({}).data, nullptr);  // a loop not to learn leaves the chain as it is
  EXPECT_EQ(successors.learn(c).data, nullptr);
  EXPECT_EQ(successors.learn(a).data, &bytes[1]);  // b followed a; a follows c from now on
  EXPECT_EQ(successors.learn(b).data, &bytes[2]);
  EXPECT_EQ(successors.learn(c).data, &bytes[0]);
  EXPECT_EQ(successors.learn(c).size, 1);

  // A team held with the successors adds to them; the loops still run as they would without.
  with_threads(2, [&] {
    for (int hold = 0; hold < 3; ++hold) {
      std::atomic<int64_t> covered{0};
      StepTeam::hold(
          [&] {
            for (const auto& range : {a, b}) {
              team_parallel_for(
                  0, 10, 1, [&](int64_t begin, int64_t end) { covered += end - begin; }, range);
            }
          },
          &successors);
      EXPECT_EQ(covered.load(), 20);
    }
  });
  // The holds learned that a came after b (before them: c), from one hold to the next.
  EXPECT_EQ(successors.learn(b).data, &bytes[0]);
}

}  // namespace
}  // namespace tfm
