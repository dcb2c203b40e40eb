#include "data/epoch_batches.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "data/split_mix.h"

namespace tfm {
namespace {

/// The shards' order in `epoch`, from a stream of its own. One shard keeps its place.
std::vector<size_t> shard_order(size_t shards, uint64_t seed, int64_t epoch) {
  std::vector<size_t> order(shards);
  for (size_t i = 0; i < shards; ++i) order[i] = i;
  SplitMix64 random((seed ^ 0x5348415244u) + static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull);
  shuffle(order, random);
  return order;
}

}  // namespace

std::vector<size_t> count_batches(const std::vector<Shard>& shards, const BatchingOptions& options) {
  std::vector<size_t> counts;
  counts.reserve(shards.size());
  for (const Shard& shard : shards) {
    counts.push_back(batching_stats(shard, options).batches);
    if (shards.size() > 1) shard.release_pages();  // the lengths are read again when the shard's turn comes
  }
  return counts;
}

EpochBatches::EpochBatches(const std::vector<Shard>& shards, std::vector<size_t> counts, const BatchingOptions& options,
                           int64_t epoch)
    : shards_(shards), options_(options), epoch_(epoch), order_(shard_order(shards.size(), options.seed, epoch)) {
  if (counts.size() != shards.size()) throw std::invalid_argument("EpochBatches: one count per shard");
  for (const size_t shard : order_) {
    total_ += counts[shard];
    ends_.push_back(total_);
  }
}

Batch EpochBatches::collate(size_t index) {
  if (index >= total_) {
    throw std::out_of_range("EpochBatches: no batch " + std::to_string(index) + " of " + std::to_string(total_));
  }
  const size_t position = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
  const size_t first = position == 0 ? 0 : ends_[position - 1];
  const std::lock_guard<std::mutex> lock(mutex_);
  if (position != current_) {
    if (current_ != SIZE_MAX && shards_.size() > 1) shards_[order_[current_]].release_pages();
    current_batches_ = BatchPlan();
    current_ = SIZE_MAX;
    const Shard& shard = shards_[order_[position]];
    shard.verify();
    current_batches_ = plan_batches(shard, options_, epoch_, order_[position]);
    current_ = position;
  }
  return tfm::collate(shards_[order_[position]], current_batches_.batch(index - first));
}

}  // namespace tfm
