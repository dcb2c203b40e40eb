#pragma once
#include <atomic>
#include <cstdint>

namespace tfm {

/// A counter that threads wait on: a waiter pauses for a while, then sleeps in the kernel until
/// another thread rings (adds to) the counter. Why not only pause: with more runnable threads than
/// cores (two processes, or two tests side by side), a waiter that only paused burned its whole
/// time slice whenever the thread it waited for had been descheduled (BENCHMARKS.md, "The step
/// team under contention"). Why not sleep at once: where the cores are free, waking a sleeper
/// costs tens of microseconds, more than a decoding step's loops are apart.
class Doorbell {
 public:
  uint32_t value() const { return count_.load(std::memory_order_acquire); }
  /// Adds one and wakes the threads sleeping on the bell.
  void ring();
  /// Sets the value without waking anyone: for a bell no one waits on now.
  void reset(uint32_t value) { count_.store(value, std::memory_order_relaxed); }
  /// Sleeps while the value is still `seen`; returns at once if it is not. May return early
  /// (a signal, another bell's ring on the same word): callers look again.
  void sleep_while(uint32_t seen);
  /// Threads asleep on the bell now (for tests).
  int sleepers() const { return sleepers_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint32_t> count_{0};
  std::atomic<int> sleepers_{0};
};

/// Pauses, then sleeps on `bell`, until ready() holds. ready() is looked at after each look at the
/// bell's value, so a ring between the two is never missed: whatever makes ready() true must ring
/// the bell after it.
template <typename Ready>
void wait_until(Doorbell& bell, const Ready& ready);

/// Paused waiting worth spending before sleeping: ~50 us, measured on the clock since CPUs' pause
/// instructions last from ~10 to ~140 cycles.
class PauseBudget {
 public:
  /// One pause; false once the budget is spent (then sleep, and reset() once woken).
  bool pause();
  void reset() { pauses_ = 0, started_ = 0; }

 private:
  uint32_t pauses_ = 0;
  int64_t started_ = 0;  // ns on the steady clock, taken at the first look at the clock
};

template <typename Ready>
void wait_until(Doorbell& bell, const Ready& ready) {
  PauseBudget budget;
  for (;;) {
    const uint32_t seen = bell.value();
    if (ready()) return;
    if (!budget.pause()) {
      bell.sleep_while(seen);
      budget.reset();
    }
  }
}

}  // namespace tfm
