#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace tfm {

/// One long-lived thread that runs the tasks handed to it, one at a time, while the caller does
/// other work. Long-lived because a thread's allocator cache and OpenMP team stay warm between
/// tasks: a new thread per task re-faults the pages of everything it allocates, each time.
class TaskThread {
 public:
  TaskThread();
  /// Waits for the task in hand (its exception, if any, is dropped), then ends the thread.
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  /// Starts `task` on the thread. One task at a time: wait() for it before the next.
  void start(std::function<void()> task);
  /// Waits until the task started last is done; rethrows what it threw.
  void wait();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> task_;
  bool pending_ = false, running_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace tfm
