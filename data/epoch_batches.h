#pragma once
// An epoch's batches over a split of several shards. Batches are formed within each shard
// (make_batches), the shards come in an order drawn from (seed, epoch), and each shard's batches
// in their own shuffled order: batch g of the epoch is the same on every rank and every resume.
// Only one shard's batch list is held at a time, so memory follows the shard size, not the corpus.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "data/batching.h"
#include "data/shard.h"

namespace tfm {

/// How many batches make_batches gives for each shard (the same in every epoch).
std::vector<size_t> count_batches(const std::vector<Shard>& shards, const BatchingOptions& options);

class EpochBatches {
 public:
  /// `counts` is count_batches(shards, options). `shards` must outlive this object.
  EpochBatches(const std::vector<Shard>& shards, std::vector<size_t> counts, const BatchingOptions& options,
               int64_t epoch);

  /// Batches in the epoch.
  size_t size() const { return total_; }
  /// Batch `index` of the epoch, collated. The first batch taken from a shard verifies its
  /// checksum and builds its batch list (dropping the previous shard's list and pages), so
  /// batches are best taken in rising order. Thread-safe.
  Batch collate(size_t index);

 private:
  const std::vector<Shard>& shards_;
  BatchingOptions options_;
  int64_t epoch_;
  std::vector<size_t> order_;  // shard indices in epoch order
  std::vector<size_t> ends_;   // ends_[k]: batches in order_[0..k]
  size_t total_ = 0;

  std::mutex mutex_;
  size_t current_ = SIZE_MAX;  // position in order_ of the shard whose list is held
  BatchPlan current_batches_;
};

}  // namespace tfm
