#include "runtime/huge_pages.h"

#include "runtime/busy_scope.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>

#if defined(__linux__)
#include <sched.h>
#include <sys/mman.h>
#endif

namespace tfm {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr uintptr_t kLargestGap = uintptr_t{4} << 20;  // between ranges taken as one span

#if defined(__linux__)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1's value; older headers lack it, older kernels answer EINVAL
#endif

constexpr int kTriesWhileBusy = 8;  // EAGAIN: a page locked or off the LRU for the moment

/// Collapses one 2 MiB page: 0, or the errno of the kernel's last refusal.
int collapse_page(uintptr_t page) {
  for (int attempt = 0;; ++attempt) {
    if (madvise(reinterpret_cast<void*>(page), kHugePage, MADV_COLLAPSE) == 0) return 0;
    if (errno != EAGAIN || attempt + 1 == kTriesWhileBusy) return errno;
    sched_yield();
  }
}

/// Collapses the 2 MiB pages wholly inside [begin, end) one at a time, so that a page the kernel
/// refuses (not mapped, no memory) leaves the others collapsed.
void collapse_pages(uintptr_t begin, uintptr_t end, const std::function<bool()>& before_page, HugePageBytes& bytes) {
  for (uintptr_t page = (begin + kHugePage - 1) / kHugePage * kHugePage; page + kHugePage <= end; page += kHugePage) {
    if (before_page && !before_page()) break;
    const int refusal = collapse_page(page);
    if (refusal == 0) {
      bytes.backed += static_cast<int64_t>(kHugePage);
    } else if (refusal == ENOMEM || refusal == EBUSY) {  // no free 2 MiB page; the cgroup's limit
      bytes.lacking_memory += static_cast<int64_t>(kHugePage);
    }
  }
}
#else
void collapse_pages(uintptr_t, uintptr_t, const std::function<bool()>&, HugePageBytes&) {}
#endif

}  // namespace

HugePageBytes back_with_huge_pages(std::vector<MemoryRange> ranges, const std::function<bool()>& before_page) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                              [](const MemoryRange& r) { return r.data == nullptr || r.size <= 0; }),
               ranges.end());
  std::sort(ranges.begin(), ranges.end(), [](const MemoryRange& a, const MemoryRange& b) { return a.data < b.data; });
  HugePageBytes bytes;
  for (size_t first = 0; first < ranges.size();) {
    const auto begin = reinterpret_cast<uintptr_t>(ranges[first].data);
    uintptr_t end = begin + static_cast<uintptr_t>(ranges[first].size);
    size_t next = first + 1;
    for (; next < ranges.size() && reinterpret_cast<uintptr_t>(ranges[next].data) <= end + kLargestGap; ++next) {
      end = std::max(end, reinterpret_cast<uintptr_t>(ranges[next].data) + static_cast<uintptr_t>(ranges[next].size));
    }
    collapse_pages(begin, end, before_page, bytes);
    first = next;
  }
  return bytes;
}

HugePageBacking::HugePageBacking(std::vector<MemoryRange> ranges, std::chrono::milliseconds delay)
    : worker_([this, delay, ranges = std::move(ranges)]() mutable {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          woken_changed_.wait_for(lock, delay, [this] { return woken_; });
        }
        if (stop_) return;
#if defined(__linux__)
        // Only on a core nobody else wants (the kernel may refuse; then at the usual priority).
        const sched_param idle{};
        sched_setscheduler(0, SCHED_IDLE, &idle);
#endif
        bytes_ = back_with_huge_pages(std::move(ranges), [this] { return wait_for_quiet(); });
      }) {
}

bool HugePageBacking::wait_for_quiet() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_) return false;
    if (woken_) return true;  // by wait(): now, quiet or not (the destructor's wake also stops)
    const auto quiet = quiet_for();
    if (quiet >= kQuietBeforePage) break;
    waiting_for_quiet_ = true;
    // Rechecked at the earliest moment the quiet could be long enough, or when woken.
    woken_changed_.wait_for(lock, kQuietBeforePage - quiet);
  }
  waiting_for_quiet_ = false;
  return true;
}

HugePageBacking::~HugePageBacking() {
  wake(/*stop=*/true);
  if (worker_.joinable()) worker_.join();
}

void HugePageBacking::wake(bool stop) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (stop) stop_ = true;
    woken_ = true;
  }
  woken_changed_.notify_all();
}

HugePageBytes HugePageBacking::wait() {
  wake(/*stop=*/false);
  const std::lock_guard<std::mutex> lock(join_mutex_);  // one joins; the others wait for it here
  if (worker_.joinable()) worker_.join();
  return bytes_;
}

}  // namespace tfm
