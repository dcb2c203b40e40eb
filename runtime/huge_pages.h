#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tfm {

/// Bytes a process reads over and over: a model's prepared weights.
struct MemoryRange {
  const void* data = nullptr;
  int64_t size = 0;
};

/// Backs the memory of `ranges` with 2 MiB pages now (Linux's MADV_COLLAPSE, 6.1 on), where
/// whole aligned 2 MiB pages lie inside them. Ranges closer than 4 MiB are taken as one span:
/// a model's weights lie side by side in the heap with a few freed blocks between them, which
/// stay resident under tfm's allocator settings, so a span costs almost no memory beyond them.
/// At batch 1 a decoding step streams every weight once, ~19 MB at the small size: through 4 KiB
/// pages that is ~4,700 address translations a step, more than the CPU's translation cache
/// holds, and each one missed costs a page walk (two-level under a hypervisor). Returns the bytes
/// now in 2 MiB pages; 0 where the kernel cannot (older than 6.1, or transparent huge pages off),
/// which leaves the memory as it was.
/// With `stop`, ends before the next 2 MiB page once *stop is true.
int64_t back_with_huge_pages(std::vector<MemoryRange> ranges, const std::atomic<bool>* stop = nullptr);

/// back_with_huge_pages on a thread of its own, begun `delay` after construction, so that whoever
/// prepared the memory goes on (reading it meanwhile is safe: the kernel swaps each page under its
/// own lock). The kernel copies every page into a 2 MiB one it allocates: on these virtual machines
/// 0.1-0.9 s for a base-size model's 240 MB of weights, and while it runs, decoding threads wait
/// on the pages it holds (BENCHMARKS.md). A run shorter than the delay (one sentence at a prompt)
/// never pays it; a long one (a file, a server) has its pages soon after. Destroying it stops
/// after the page in progress, or before the first.
class HugePageBacking {
 public:
  HugePageBacking() = default;  // nothing to back
  HugePageBacking(std::vector<MemoryRange> ranges, std::chrono::milliseconds delay);
  ~HugePageBacking();
  HugePageBacking(const HugePageBacking&) = delete;
  HugePageBacking& operator=(const HugePageBacking&) = delete;
  /// Begins the work now if it is still waiting, and waits for it to end: the bytes now in 2 MiB
  /// pages. Any thread may call it.
  int64_t wait();

 private:
  /// Ends the delay: `stop` true ends the work too.
  void wake(bool stop);

  std::mutex mutex_;  // guards woken_
  std::condition_variable woken_changed_;
  std::mutex join_mutex_;
  bool woken_ = false;
  std::atomic<bool> stop_{false};
  int64_t bytes_ = 0;
  std::thread worker_;
};

}  // namespace tfm
