#include "runtime/step_team.h"

#include <algorithm>
#include <memory>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tfm {
namespace {

thread_local StepTeam* t_team = nullptr;

/// A spinning thread's pause: spare the core's other hardware thread and the memory.
void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

constexpr size_t kLine = 64;
/// Lines read ahead between two looks for a posted loop: 4 KB, ~0.3 us from memory.
constexpr size_t kLinesBetweenLooks = 64;

}  // namespace

StepTeam* StepTeam::of_this_thread() { return t_team; }

void StepTeam::hold(const std::function<void()>& body, Successors* successors) {
  const int threads = at::get_num_threads();
#ifdef _OPENMP
  const bool alone = threads <= 1 || at::in_parallel_region() || t_team != nullptr;
#else
  const bool alone = true;
#endif
  if (alone) {
    body();
    return;
  }
#ifdef _OPENMP
  std::atomic<StepTeam*> published{nullptr};
  std::atomic<int> arrived{0};
  std::exception_ptr failed;
  Successors learned_afresh;  // the team's table when the caller keeps none; outlives the team
  // Made before the region, so that nothing inside it can throw before the members are released,
  // and kept after it: a member may still be looking at it as it leaves, until the region's end
  // has joined every thread.
  const std::unique_ptr<StepTeam> team(new StepTeam(threads, successors != nullptr ? *successors : learned_afresh));
  // One index a thread (or a few, should OpenMP give fewer threads): the calling thread takes
  // index 0 and runs the body, every other thread serves.
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t) {
    if (begin != 0) {
      StepTeam* joined = nullptr;
      while ((joined = published.load(std::memory_order_acquire)) == nullptr) relax();
      joined->serve(arrived.fetch_add(1, std::memory_order_acq_rel) + 1);
      return;
    }
    team->members_ = std::max(1, std::min(threads, omp_get_num_threads()));
    const int members = team->members_;
    published.store(team.get(), std::memory_order_release);
    // Every member takes part in every loop: none may arrive after the first.
    while (arrived.load(std::memory_order_acquire) < members - 1) relax();
    t_team = team.get();
    try {
      body();
    } catch (...) {
      failed = std::current_exception();
    }
    t_team = nullptr;
    team->release();
  });
  if (failed) std::rethrow_exception(failed);
#endif
}

void StepTeam::release() {
  released_.store(true, std::memory_order_relaxed);
  posted_.fetch_add(1, std::memory_order_release);
}

int StepTeam::sharing(int64_t count, int64_t grain) const {
  if (count <= grain) return 1;  // as at::parallel_for: no split at or below one grain
  return static_cast<int>(std::min<int64_t>(members_, (count + grain - 1) / std::max<int64_t>(1, grain)));
}

std::pair<int64_t, int64_t> StepTeam::share_of(int member, int sharing, int64_t count) {
  const int64_t chunk = (count + sharing - 1) / sharing;
  const int64_t begin = std::min(count, member * chunk);
  return {begin, std::min(count, begin + chunk)};
}

MemoryRange StepTeam::Successors::learn(MemoryRange reads) {
  if (reads.data == nullptr) return {};
  if (last_ != nullptr && last_ != reads.data) next_[last_] = reads;
  last_ = reads.data;
  const auto known = next_.find(reads.data);
  return known != next_.end() ? known->second : MemoryRange{};
}

void StepTeam::parallel_for(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& share,
                            MemoryRange reads) {
  const MemoryRange ahead = successors_.learn(reads);
  const int sharing = this->sharing(count, grain);
  if (sharing <= 1) {
    share(0, count);
    return;
  }
  share_ = &share;
  count_ = count;
  sharing_ = sharing;
  ahead_ = ahead;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t posted = posted_.fetch_add(1, std::memory_order_release) + 1;
  std::exception_ptr failed;
  try {
    const auto [begin, end] = share_of(0, sharing, count);
    share(begin, end);
  } catch (...) {
    failed = std::current_exception();
  }
  // The members call `share` until they are done: wait for them even when the own share threw.
  while (done_.load(std::memory_order_acquire) < members_ - 1) relax();
  ended_.store(posted, std::memory_order_release);
  if (failing_.load(std::memory_order_acquire)) {
    if (!failed) failed = failed_;
    failed_ = nullptr;
    failing_.store(false, std::memory_order_relaxed);
  }
  if (failed) std::rethrow_exception(failed);
}

void StepTeam::serve(int member) {
  uint64_t seen = 0;
  // Read ahead: this member's parts of the next loop's bytes, split as evenly as the shares (part
  // p is roughly share p's), a line of each part in turn, so that every share's first lines come
  // first.
  const char* ahead = nullptr;
  const auto parts = static_cast<size_t>(members_);
  const auto helpers = static_cast<size_t>(members_ - 1);
  size_t part_bytes = 0, line = 0, lines = 0;
  unsigned sink = 0;
  for (;;) {
    const uint64_t posted = posted_.load(std::memory_order_acquire);
    if (posted != seen) {
      seen = posted;
      if (released_.load(std::memory_order_relaxed)) break;
      if (member < sharing_) {
        try {
          const auto [begin, end] = share_of(member, sharing_, count_);
          if (begin < end) (*share_)(begin, end);
        } catch (...) {
          if (!failing_.exchange(true, std::memory_order_acq_rel)) failed_ = std::current_exception();
        }
      }
      ahead = static_cast<const char*>(ahead_.data);
      part_bytes = static_cast<size_t>(ahead_.size) / parts;
      lines = ahead != nullptr ? part_bytes / kLine : 0;
      line = 0;
      done_.fetch_add(1, std::memory_order_release);
      continue;
    }
    // Only once the loop has ended: reading ahead while another member still streams its share
    // would take from that share's bandwidth.
    if (line < lines && ended_.load(std::memory_order_acquire) == seen) {
      const size_t stop = std::min(lines, line + kLinesBetweenLooks);
      for (; line < stop; ++line) {
        for (size_t part = static_cast<size_t>(member - 1); part < parts; part += helpers)
          sink += *reinterpret_cast<const volatile unsigned char*>(ahead + part * part_bytes + line * kLine);
      }
      continue;
    }
    relax();
  }
  (void)sink;
}

}  // namespace tfm
