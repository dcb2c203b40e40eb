#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "data/batching.h"

namespace tfm {

/// Hands out the collated batches of an epoch in order, collating batch i+1 on a background
/// thread while batch i trains. On CUDA the tensors are pinned and copied without blocking, so
/// the copy overlaps the step too. One worker thread serves the prefetcher's whole life, across
/// epochs.
class BatchPrefetcher {
 public:
  /// Collates batch i of the epoch (called on the worker thread, in rising order of i).
  using Collate = std::function<Batch(size_t)>;

  explicit BatchPrefetcher(const torch::Device& device);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  /// Starts handing out batches [first, count) of an epoch, made by `collate`; anything collated
  /// for an earlier epoch is dropped.
  void begin_epoch(size_t count, Collate collate, size_t first);

  /// The next batch, its tensors on the device. Throws std::out_of_range past the last batch,
  /// and rethrows what collating it threw.
  Batch next();

 private:
  void work();

  torch::Device device_;

  std::mutex mutex_;
  std::condition_variable changed_;
  size_t count_ = 0;  // batches in the epoch
  Collate collate_;
  size_t next_ = 0;           // the batch next() returns next
  size_t produce_ = 0;        // the batch the worker collates next
  bool busy_ = false;         // the worker is collating (calling collate_) right now
  std::deque<Batch> ready_;   // collated, not yet handed out
  std::exception_ptr error_;  // what stopped collation, rethrown by next()
  bool stopping_ = false;
  std::thread worker_;  // last: starts once everything above exists
};

}  // namespace tfm
