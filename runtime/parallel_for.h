#pragma once
#include <cstdint>

#include <ATen/Parallel.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace tfm {

#if defined(__SANITIZE_THREAD__)
namespace parallel_for_detail {
/// A share's work, never inlined into the region's body or the share's wrapper: the suppressions
/// that leave out their reads of the loop's arguments (scripts/sanitizer/tsan.supp) must not also
/// cover the share's own accesses.
template <typename F>
__attribute__((noinline)) void run_share(const F& f, int64_t begin, int64_t end) {
  f(begin, end);
}

/// Calls Annotate(sync) when it goes out of scope, also when an exception passes.
template <void (*Annotate)(void*)>
struct OnExit {
  void* sync;
  ~OnExit() { Annotate(sync); }
};
}  // namespace parallel_for_detail
#endif

/// at::parallel_for, as every tfm loop calls it. Under ThreadSanitizer (scripts/test --tsan) it
/// also tells the sanitizer what the OpenMP region's fork and join order: libgomp is not
/// instrumented, so its barriers are invisible, and without this every share a team member ran
/// looks racy against what the calling thread wrote before the loop and reads after it. Shares
/// are not ordered among themselves, so a race between two shares of one loop is still reported
/// (scripts/sanitizer/tsan.supp says which accesses of the region itself are not).
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
#if defined(__SANITIZE_THREAD__)
  using parallel_for_detail::OnExit;
  // Two addresses the sanitizer keeps clocks for: the loop's start, released by the calling
  // thread and acquired by each share; its end, released by each share and acquired once all are.
  char fork_join[2];
  __tsan_release(&fork_join[0]);
  const OnExit<__tsan_acquire> joined{&fork_join[1]};
  at::parallel_for(begin, end, grain, [&](int64_t share_begin, int64_t share_end) {
    __tsan_acquire(&fork_join[0]);
    const OnExit<__tsan_release> done{&fork_join[1]};
    parallel_for_detail::run_share(f, share_begin, share_end);
  });
#else
  at::parallel_for(begin, end, grain, f);
#endif
}

}  // namespace tfm
