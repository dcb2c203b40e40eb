#pragma once
#include <chrono>

namespace tfm {

/// Marks the process busy with work a user waits for (an encoder pass, a decoding step) for the
/// scope's lifetime, so that background work which would slow that work can wait for a quiet
/// moment (runtime/huge_pages.h). Any thread; scopes may nest and overlap. Costs two atomic
/// updates and a clock read.
class BusyScope {
 public:
  BusyScope();
  ~BusyScope();
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

/// How long no BusyScope has been alive: zero while one is; since the process started where
/// none ever was.
std::chrono::nanoseconds quiet_for();

}  // namespace tfm
