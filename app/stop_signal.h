#pragma once

namespace tfm {

/// SIGINT and SIGTERM as an event a thread can wait for (a server's graceful stop): the handlers
/// write the signal's number to a pipe, which wait() reads. While one exists, the first signal is
/// caught; after it the defaults return, so a second one ends the process at once.
class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  /// Blocks until a signal arrives (returns its number) or cancel() is called (returns 0).
  int wait();
  /// Wakes wait() without a signal.
  void cancel();
};

}  // namespace tfm
