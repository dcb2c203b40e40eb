#include "runtime/doorbell.h"

#include <chrono>
#include <climits>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tfm {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "the kernel waits on the atomic's own 32 bits");

constexpr int64_t kPausingNs = 50'000;
/// Pauses between two looks at the clock: the clock costs ~20-50 ns, a pause 3-50.
constexpr uint32_t kPausesBetweenClocks = 32;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__linux__)
uint32_t* word_of(std::atomic<uint32_t>& count) { return reinterpret_cast<uint32_t*>(&count); }
#endif

}  // namespace

bool PauseBudget::pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
  if (++pauses_ % kPausesBetweenClocks != 0) return true;
  const int64_t now = now_ns();
  if (started_ == 0) started_ = now;
  return now - started_ < kPausingNs;
}

void Doorbell::ring() {
  // Both sequentially consistent, as in sleep_while: either the sleeper sees the new value and
  // does not sleep, or this sees the sleeper and wakes it.
  count_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
#if defined(__linux__)
    syscall(SYS_futex, word_of(count_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#endif
  }
}

void Doorbell::sleep_while(uint32_t seen) {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (count_.load(std::memory_order_seq_cst) == seen) {
#if defined(__linux__)
    // Returns at once if the value is no longer `seen` when the kernel looks.
    syscall(SYS_futex, word_of(count_), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
#else
    std::this_thread::yield();
#endif
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace tfm
