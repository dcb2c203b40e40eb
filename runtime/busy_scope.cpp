#include "runtime/busy_scope.h"

#include <atomic>
#include <cstdint>

namespace tfm {
namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

std::atomic<int64_t> busy_scopes{0};
std::atomic<int64_t> last_busy_end_ns{now_ns()};

}  // namespace

BusyScope::BusyScope() { busy_scopes.fetch_add(1, std::memory_order_relaxed); }

BusyScope::~BusyScope() {
  // The end time first: a reader that sees no scope then sees this one's end, or a later one.
  last_busy_end_ns.store(now_ns(), std::memory_order_relaxed);
  busy_scopes.fetch_sub(1, std::memory_order_release);
}

std::chrono::nanoseconds quiet_for() {
  if (busy_scopes.load(std::memory_order_acquire) > 0) return std::chrono::nanoseconds(0);
  const int64_t quiet = now_ns() - last_busy_end_ns.load(std::memory_order_relaxed);
  return std::chrono::nanoseconds(quiet > 0 ? quiet : 0);
}

}  // namespace tfm
