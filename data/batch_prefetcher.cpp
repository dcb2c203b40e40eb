#include "data/batch_prefetcher.h"

#include <stdexcept>
#include <string>

namespace tfm {
namespace {

/// Collates on the calling (background) thread and, for CUDA, starts the host-to-device copies.
Batch collate_for(const ParallelDataset& data, const std::vector<int64_t>& rows, const torch::Device& device) {
  Batch batch = collate(data, rows);
  if (device.is_cuda()) {
    for (auto* tensor : {&batch.source, &batch.target_in, &batch.target_out}) {
      *tensor = tensor->pin_memory().to(device, /*non_blocking=*/true);
    }
  }
  return batch;
}

}  // namespace

BatchPrefetcher::BatchPrefetcher(const ParallelDataset& data, const std::vector<std::vector<int64_t>>& batches,
                                 size_t first, const torch::Device& device)
    : data_(data), batches_(batches), device_(device), next_(first) {
  start(first);
}

BatchPrefetcher::~BatchPrefetcher() {
  if (pending_.valid()) pending_.wait();  // the worker reads data_ and batches_: let it finish
}

void BatchPrefetcher::start(size_t index) {
  if (index >= batches_.size()) return;
  pending_ = std::async(std::launch::async,
                        [this, index] { return collate_for(data_, batches_[index], device_); });
}

Batch BatchPrefetcher::next() {
  if (!pending_.valid()) {
    throw std::out_of_range("BatchPrefetcher: no batch " + std::to_string(next_) + " of " +
                            std::to_string(batches_.size()));
  }
  Batch batch = pending_.get();
  start(++next_);
  return batch;
}

}  // namespace tfm
