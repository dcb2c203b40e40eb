#include "runtime/step_team.h"

#include <algorithm>
#include <memory>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tfm {
namespace {

thread_local StepTeam* t_team = nullptr;

constexpr size_t kLine = 64;
/// Lines read ahead between two looks for a posted loop: 4 KB, ~0.3 us from memory.
constexpr size_t kLinesBetweenLooks = 64;

}  // namespace

StepTeam* StepTeam::of_this_thread() { return t_team; }

StepTeam::StepTeam(int threads, Successors& successors)
    : members_(threads), claimed_(new std::atomic<uint32_t>[static_cast<size_t>(threads)]), successors_(successors) {
  for (int share = 0; share < threads; ++share) claimed_[share].store(0, std::memory_order_relaxed);
}

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
  Doorbell publishing;
  std::atomic<int> arrived{0};
  std::exception_ptr failed;
  Successors learned_afresh;  // the team's table when the caller keeps none; outlives the team
  // Made before the region, so that nothing inside it can throw before the members are released,
  // and kept after it: a member may still be looking at it as it leaves, until the region's end
  // has joined every thread.
  const std::unique_ptr<StepTeam> team(new StepTeam(threads, successors != nullptr ? *successors : learned_afresh));
  // One index a thread (or a few, should OpenMP give fewer threads): the calling thread takes
  // index 0 and runs the body, every other thread serves.
  tfm::parallel_for(0, threads, 1, [&](int64_t begin, int64_t) {
    if (begin != 0) {
      wait_until(publishing, [&] { return published.load(std::memory_order_acquire) != nullptr; });
      published.load(std::memory_order_acquire)->serve(arrived.fetch_add(1, std::memory_order_acq_rel) + 1);
      return;
    }
    team->members_ = std::max(1, std::min(threads, omp_get_num_threads()));
    published.store(team.get(), std::memory_order_release);
    publishing.ring();
    // No waiting for the members to arrive: until one has, the calling thread runs its shares.
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
  posted_.ring();
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

bool StepTeam::claim(int share, uint32_t loop) {
  uint32_t last = claimed_[share].load(std::memory_order_relaxed);
  // A share not claimed in `loop` yet was last claimed in an earlier one; a later one means that
  // `loop` has ended (every share of it was claimed) and another is posted.
  while (last < loop) {
    if (claimed_[share].compare_exchange_weak(last, loop, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void StepTeam::run_share(int share, std::exception_ptr& failed) noexcept {
  try {
    const auto [begin, end] = share_of(share, sharing_, count_);
    if (begin < end) (*share_)(begin, end);
  } catch (...) {
    if (!failed) failed = std::current_exception();
  }
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
  completed_.reset(0);
  const uint32_t loop = posted_.value() + 1;  // only this thread rings it
  // Shares this loop does not have count as claimed: no member takes them.
  for (int absent = sharing; absent < members_; ++absent) claimed_[absent].store(loop, std::memory_order_relaxed);
  posted_.ring();
  std::exception_ptr failed;
  run_share(0, failed);
  // The shares no member has claimed by now: the member is busy, descheduled or not yet here.
  uint32_t own = 0;
  for (int taken = 1; taken < sharing; ++taken) {
    if (claim(taken, loop)) run_share(taken, failed), ++own;
  }
  // The members call `share` until they are done: wait for them even when a share threw.
  const uint32_t by_members = static_cast<uint32_t>(sharing - 1) - own;
  wait_until(completed_, [&] { return completed_.value() >= by_members; });
  ended_.store(loop, std::memory_order_release);
  if (failing_.load(std::memory_order_acquire)) {
    if (!failed) failed = failed_;
    failed_ = nullptr;
    failing_.store(false, std::memory_order_relaxed);
  }
  if (failed) std::rethrow_exception(failed);
}

void StepTeam::serve(int member) {
  uint32_t seen = 0;
  // Read ahead: this member's parts of the next loop's bytes, split as evenly as the shares (part
  // p is roughly share p's), a line of each part in turn, so that every share's first lines come
  // first.
  const char* ahead = nullptr;
  const auto parts = static_cast<size_t>(members_);
  const auto helpers = static_cast<size_t>(members_ - 1);
  size_t part_bytes = 0, line = 0, lines = 0;
  unsigned sink = 0;
  PauseBudget idle;
  for (;;) {
    const uint32_t posted = posted_.value();
    if (posted != seen) {
      seen = posted;
      idle.reset();
      if (released_.load(std::memory_order_relaxed)) break;
      // Its own share first, then any other no one has taken (a member that was descheduled).
      lines = 0;
      for (int k = 0; k < members_ - 1; ++k) {
        const int share = 1 + (member - 1 + k) % (members_ - 1);
        if (!claim(share, seen)) continue;
        if (lines == 0) {
          // The loop's fields hold while this member's share is not done.
          ahead = static_cast<const char*>(ahead_.data);
          part_bytes = static_cast<size_t>(ahead_.size) / parts;
          lines = ahead != nullptr ? part_bytes / kLine : 0;
          line = 0;
        }
        std::exception_ptr failed;
        run_share(share, failed);
        if (failed && !failing_.exchange(true, std::memory_order_acq_rel)) failed_ = failed;
        completed_.ring();
      }
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
      idle.reset();
      continue;
    }
    if (!idle.pause()) {
      posted_.sleep_while(seen);
      idle.reset();
    }
  }
  (void)sink;
}

}  // namespace tfm
