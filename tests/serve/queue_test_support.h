#pragma once
// Shared by the batching queue tests: clocks, jobs, and a gate that holds decoding back.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "serve/batching_queue.h"

namespace tfm::testing {

using Clock = std::chrono::steady_clock;
constexpr auto kForever = std::chrono::hours(1);

inline DecodeJob job(size_t lane, std::vector<std::vector<int64_t>> sources) {
  return {lane, std::move(sources), false, nullptr};
}

/// Where decoding waits while a test fills the queue: pass() returns at once while open, and
/// waits for open() while closed.
class Gate {
 public:
  void close() { set(false); }
  void open() { set(true); }
  void pass() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return open_; });
  }

 private:
  void set(bool open) {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = open;
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
};

}  // namespace tfm::testing
