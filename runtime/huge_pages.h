#pragma once
#include <atomic>
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

/// back_with_huge_pages on a thread of its own, so that whoever prepared the memory goes on
/// (reading it meanwhile is safe: the kernel swaps each page under its own lock). The kernel copies
/// every page and allocates its 2 MiB one, which on these virtual machines took 0.1-0.9 s for a
/// base-size model's 240 MB of weights (BENCHMARKS.md): time a one-sentence translation waited
/// for before it began. Destroying it stops after the page in progress.
class HugePageBacking {
 public:
  HugePageBacking() = default;  // nothing to back
  explicit HugePageBacking(std::vector<MemoryRange> ranges);
  ~HugePageBacking();
  HugePageBacking(const HugePageBacking&) = delete;
  HugePageBacking& operator=(const HugePageBacking&) = delete;
  /// Waits for the work to end: the bytes now in 2 MiB pages. Any thread may call it.
  int64_t wait();

 private:
  std::mutex join_mutex_;
  std::atomic<bool> stop_{false};
  int64_t bytes_ = 0;
  std::thread worker_;
};

}  // namespace tfm
