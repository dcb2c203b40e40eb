#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tfm {

/// Bytes a process reads over and over: a model's prepared weights.
struct MemoryRange {
  const void* data = nullptr;
  int64_t size = 0;
};

/// What back_with_huge_pages did with the whole 2 MiB pages it asked for.
struct HugePageBytes {
  int64_t backed = 0;  // now in 2 MiB pages
  /// In pages the kernel had no 2 MiB page for at the time (ENOMEM, or the memory cgroup's limit:
  /// other processes held the memory), left as they were.
  int64_t lacking_memory = 0;
  int64_t asked() const { return backed + lacking_memory; }
};

/// Backs the memory of `ranges` with 2 MiB pages now (Linux's MADV_COLLAPSE, 6.1 on), where
/// whole aligned 2 MiB pages lie inside them. Ranges closer than 4 MiB are taken as one span:
/// a model's weights lie side by side in the heap with a few freed blocks between them, which
/// stay resident under tfm's allocator settings, so a span costs almost no memory beyond them.
/// At batch 1 a decoding step streams every weight once, ~19 MB at the small size: through 4 KiB
/// pages that is ~4,700 address translations a step, more than the CPU's translation cache
/// holds, and each one missed costs a page walk (two-level under a hypervisor). Returns the bytes
/// now in 2 MiB pages and those the kernel had no memory for; none where the kernel cannot (older
/// than 6.1, or transparent huge pages off), which leaves the memory as it was. A page the kernel
/// finds busy for the moment (EAGAIN) is asked for again.
/// `before_page`, where given, is asked before each 2 MiB page and ends the work when it answers
/// false.
HugePageBytes back_with_huge_pages(std::vector<MemoryRange> ranges, const std::function<bool()>& before_page = {});

/// back_with_huge_pages on a thread of its own, begun `delay` after construction, so that whoever
/// prepared the memory goes on (reading it meanwhile is safe: the kernel swaps each page under its
/// own lock). The kernel copies every page into a 2 MiB one it allocates: on these virtual machines
/// 0.1-3 s of the kernel's time for a base-size model's 240 MB of weights (fresh 2 MiB pages the
/// hypervisor has yet to back), and while it runs, decoding threads that touch new memory wait on
/// the address space's lock (BENCHMARKS.md): a 1000-line file decoded 1.6x slower beside it. So
/// each page waits until the process has been quiet (runtime/busy_scope.h) for `kQuietBeforePage`:
/// a file decoded back to back never pays it, a server or a prompt does between requests, and a
/// run shorter than the delay never does. Destroying it stops after the page in progress, or
/// before the first.
class HugePageBacking {
 public:
  HugePageBacking() = default;  // nothing to back
  HugePageBacking(std::vector<MemoryRange> ranges, std::chrono::milliseconds delay);
  ~HugePageBacking();
  HugePageBacking(const HugePageBacking&) = delete;
  HugePageBacking& operator=(const HugePageBacking&) = delete;
  /// How long the process must have been quiet before each page.
  static constexpr std::chrono::milliseconds kQuietBeforePage{200};

  /// Begins the work now if it is still waiting, busy or not, and waits for it to end: what it
  /// did. Any thread may call it.
  HugePageBytes wait();
  /// Whether the work waits for the process to be quiet before its next page.
  bool waiting_for_quiet() const { return waiting_for_quiet_; }

 private:
  /// Ends the delay: `stop` true ends the work too.
  void wake(bool stop);
  /// Before each page: waits until the process is quiet, woken or stopped; false once stopped.
  bool wait_for_quiet();

  std::mutex mutex_;  // guards woken_
  std::condition_variable woken_changed_;
  std::mutex join_mutex_;
  bool woken_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> waiting_for_quiet_{false};
  HugePageBytes bytes_;
  std::thread worker_;
};

}  // namespace tfm
