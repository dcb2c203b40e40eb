#include "runtime/task_thread.h"

#include <stdexcept>
#include <utility>

namespace tfm {

TaskThread::TaskThread() : thread_([this] { loop(); }) {}

TaskThread::~TaskThread() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !pending_ && !running_; });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void TaskThread::start(std::function<void()> task) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (pending_ || running_) throw std::logic_error("TaskThread::start: the previous task is not done");
    task_ = std::move(task);
    error_ = nullptr;
    pending_ = true;
  }
  changed_.notify_all();
}

void TaskThread::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !pending_ && !running_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void TaskThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return pending_ || stopping_; });
    if (!pending_) return;  // stopping, nothing in hand
    auto task = std::move(task_);
    pending_ = false;
    running_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    running_ = false;
    changed_.notify_all();
  }
}

}  // namespace tfm
