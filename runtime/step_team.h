#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

#include <ATen/Parallel.h>

#include "runtime/doorbell.h"
#include "runtime/huge_pages.h"
#include "runtime/parallel_for.h"

namespace tfm {

/// LibTorch's threads held in one parallel region for a whole search at a few rows: the calling
/// thread runs the search, the others serve its parallel loops (team_parallel_for) and, between
/// loops, read into their caches the weight of the product that came next last time.
///
/// Why: at a beam's few rows a product streams its weight from memory at the memory's rate, and
/// between products the calling thread's serial work (attention, norms, the beam's bookkeeping)
/// left the memory idle while the other threads spun in LibTorch's pool. Weights read ahead then
/// come from the caches, twice as fast (BENCHMARKS.md). Inside the region LibTorch's own parallel
/// loops run on the calling thread alone, so a team pays only where the search's loops go through
/// team_parallel_for: decoding at a few rows on the CPU.
///
/// A loop never waits for a member that has not begun its share: the calling thread runs the
/// shares no member has claimed once its own is done. So a member that was descheduled (more
/// runnable threads than cores) costs the loop its help, not the rest of a time slice; and
/// members that have long had nothing to do sleep until the next loop is posted (Doorbell).
class StepTeam {
 public:
  /// Which loop followed which, by the bytes they read: what a team learns in a search's first
  /// step. A caller that holds a team step by step (a server's running batch) keeps it between
  /// holds, so that each step reads ahead from its first loop on. Members read the bytes it names:
  /// they must stay mapped while it is used (a model's weights, not a step's buffers).
  class Successors {
   public:
    /// The bytes of the loop that followed the one reading `reads` last time, or none; records
    /// `reads` as the successor of the loop before it.
    MemoryRange learn(MemoryRange reads);

   private:
    std::unordered_map<const void*, MemoryRange> next_;
    const void* last_ = nullptr;
  };

  /// Runs body() on the calling thread while LibTorch's other threads (at::get_num_threads() in
  /// all) serve it as a team; with one thread, inside a parallel region or a team already, body()
  /// runs alone. body's exception, if any, is rethrown once the team is released. `successors`:
  /// what earlier holds learned, kept and added to (nullptr: the team learns afresh).
  static void hold(const std::function<void()>& body, Successors* successors = nullptr);

  /// The team the calling thread holds, or nullptr.
  static StepTeam* of_this_thread();

  /// share(begin, end) over [0, count) in contiguous shares, split as at::parallel_for splits
  /// them (at least `grain` a share, the calling thread's first); returns once every share is
  /// done and rethrows the first share's exception. `reads`: the bytes the loop reads, by which
  /// the team learns which loop follows which (nullptr data: a loop not to learn).
  void parallel_for(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& share,
                    MemoryRange reads = {});

  int members() const { return members_; }
  /// Members asleep, waiting for a loop (for tests).
  int members_asleep() const { return posted_.sleepers(); }

 private:
  StepTeam(int threads, Successors& successors);
  /// A member's life in the region: serve loops, read ahead between them, until released.
  void serve(int member);
  /// The members that take a share of `count` items at `grain` a share at least.
  int sharing(int64_t count, int64_t grain) const;
  /// [begin, end) of `member`'s share of `count` among `sharing`.
  static std::pair<int64_t, int64_t> share_of(int member, int sharing, int64_t count);
  /// Takes share `share` of loop `loop` if no thread has: then the loop's fields hold until the
  /// share is done.
  bool claim(int share, uint32_t loop);
  /// Runs share `share` of the posted loop, keeping its exception in `failed`.
  void run_share(int share, std::exception_ptr& failed) noexcept;
  void release();

  int members_;                     // the calling thread and the others: set before any serves
  Doorbell posted_;                 // loops posted (a team lives one hold: 2^32 loops do not wrap)
  Doorbell completed_;              // shares of the posted loop done by members
  std::atomic<uint32_t> ended_{0};  // the last posted loop whose every share is done
  std::atomic<bool> released_{false};
  // [threads]: the last loop in which each share was claimed (share 0 is the caller's own).
  std::unique_ptr<std::atomic<uint32_t>[]> claimed_;
  // The posted loop: written before posted_ rings, read by a member once it has claimed a share.
  const std::function<void(int64_t, int64_t)>* share_ = nullptr;
  int64_t count_ = 0;
  int sharing_ = 0;
  MemoryRange ahead_;          // what the members read once the loop has ended
  std::exception_ptr failed_;  // the first member's exception
  std::atomic<bool> failing_{false};
  Successors& successors_;  // the caller's or hold()'s own: touched by the calling thread only
};

/// parallel_for (runtime/parallel_for.h), or the loop of the team the calling thread holds
/// (StepTeam), which splits [begin, end) the same way.
template <typename F>
void team_parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f, MemoryRange reads = {}) {
  if (StepTeam* team = StepTeam::of_this_thread(); team != nullptr && end > begin) {
    const std::function<void(int64_t, int64_t)> share = [&](int64_t b, int64_t e) { f(begin + b, begin + e); };
    team->parallel_for(end - begin, grain, share, reads);
    return;
  }
  parallel_for(begin, end, grain, f);
}

}  // namespace tfm
