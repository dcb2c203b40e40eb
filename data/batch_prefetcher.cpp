#include "data/batch_prefetcher.h"

#include <stdexcept>
#include <string>

namespace tfm {
namespace {

/// Collates on the calling (background) thread and, for CUDA, starts the host-to-device copies.
Batch collate_for(const BatchPrefetcher::Collate& collate, size_t index, const torch::Device& device) {
  Batch batch = collate(index);
  if (device.is_cuda()) {
    for (auto* tensor : {&batch.source, &batch.target_in, &batch.target_out}) {
      *tensor = tensor->pin_memory().to(device, /*non_blocking=*/true);
    }
  }
  return batch;
}

}  // namespace

/// Batches collated ahead of the one training: one overlaps collation with the step.
constexpr size_t kAhead = 1;

BatchPrefetcher::BatchPrefetcher(const torch::Device& device) : device_(device), worker_([this] { work(); }) {}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void BatchPrefetcher::begin_epoch(size_t count, Collate collate, size_t first) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !busy_; });  // the worker must not be calling collate_
  count_ = count;
  collate_ = std::move(collate);
  next_ = produce_ = first;
  ready_.clear();
  error_ = nullptr;
  lock.unlock();
  changed_.notify_all();
}

void BatchPrefetcher::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || (!error_ && produce_ < count_ && ready_.size() < kAhead); });
    if (stopping_) return;
    const size_t index = produce_++;
    busy_ = true;
    lock.unlock();
    Batch batch;
    std::exception_ptr error;
    try {
      batch = collate_for(collate_, index, device_);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error) {
      error_ = error;
    } else {
      ready_.push_back(std::move(batch));
    }
    changed_.notify_all();
  }
}

Batch BatchPrefetcher::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_ >= count_) {
    throw std::out_of_range("BatchPrefetcher: no batch " + std::to_string(next_) + " of " + std::to_string(count_));
  }
  changed_.wait(lock, [this] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  ++next_;
  lock.unlock();
  changed_.notify_all();
  return batch;
}

}  // namespace tfm
