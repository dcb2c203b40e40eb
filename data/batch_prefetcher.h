#pragma once
#include <cstddef>
#include <future>
#include <vector>

#include <torch/types.h>

#include "data/batching.h"
#include "data/parallel_dataset.h"

namespace tfm {

/// Hands out the collated batches of one epoch in order, collating batch i+1 on a background
/// thread while batch i trains. On CUDA the tensors are pinned and copied without blocking, so
/// the copy overlaps the step too. `data` and `batches` must outlive the prefetcher.
class BatchPrefetcher {
 public:
  /// Starts with batches[first].
  BatchPrefetcher(const ParallelDataset& data, const std::vector<std::vector<int64_t>>& batches, size_t first,
                  const torch::Device& device);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  /// The next batch, its tensors on the device. Throws std::out_of_range past the last batch.
  Batch next();

 private:
  void start(size_t index);

  const ParallelDataset& data_;
  const std::vector<std::vector<int64_t>>& batches_;
  torch::Device device_;
  size_t next_ = 0;
  std::future<Batch> pending_;
};

}  // namespace tfm
