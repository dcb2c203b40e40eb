#include "runtime/busy_scope.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace tfm {
namespace {

// Quiet is zero while any scope lives, nested or on another thread, and grows once none does.
TEST(BusyScope, QuietOnlyOnceNoScopeLives) {
  {
    const BusyScope outer;
    EXPECT_EQ(quiet_for().count(), 0);
    std::thread([] {
      const BusyScope inner;
      EXPECT_EQ(quiet_for().count(), 0);
    }).join();
    EXPECT_EQ(quiet_for().count(), 0);
  }
  const auto first = quiet_for();
  while (quiet_for() <= first) std::this_thread::yield();
  const BusyScope again;
  EXPECT_EQ(quiet_for().count(), 0);
}

}  // namespace
}  // namespace tfm
