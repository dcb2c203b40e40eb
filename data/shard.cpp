#include "data/shard.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <stdexcept>

namespace tfm {
namespace {

/// A shard built in memory: the vectors its arrays point into.
struct OwnedArrays : ShardStorage {
  std::vector<int64_t> pair_offsets{0};
  std::vector<uint16_t> source_lengths, target_lengths;
  std::vector<int32_t> ids;
};

/// Widens `count` ids from `ids` at `first` into `out`, checking each against the vocabulary.
template <class Id>
bool copy_ids(const void* ids, int64_t first, int64_t count, int64_t vocab_size, int64_t* out) {
  const Id* from = static_cast<const Id*>(ids) + first;
  bool inside = true;
  for (int64_t k = 0; k < count; ++k) {
    const auto id = static_cast<int64_t>(from[k]);
    inside = inside && id >= 0 && id < vocab_size;
    out[k] = id;
  }
  return inside;
}

}  // namespace

struct Shard::Verification {
  std::once_flag once;
  std::exception_ptr failure;
};

Shard::Shard(ShardArrays arrays, int64_t vocab_size, std::string name, std::shared_ptr<const ShardStorage> storage)
    : arrays_(arrays),
      vocab_size_(vocab_size),
      name_(std::move(name)),
      storage_(std::move(storage)),
      verification_(std::make_shared<Verification>()) {}

Shard Shard::from_dataset(const ParallelDataset& data, int64_t vocab_size, std::string name) {
  if (data.size() > kMaxShardPairs) throw std::invalid_argument(name + ": more pairs than a shard holds");
  auto owned = std::make_shared<OwnedArrays>();
  ShardArrays arrays;
  arrays.pairs = data.size();
  arrays.id_bytes = 4;
  arrays.source_tokens = data.source.total_tokens();
  arrays.target_tokens = data.target.total_tokens();
  owned->ids.reserve(static_cast<size_t>(data.source.total_tokens() + data.target.total_tokens()));
  for (int64_t i = 0; i < data.size(); ++i) {
    for (const TokenizedSide* side : {&data.source, &data.target}) {
      const int64_t length = side->length(i);
      if (length > kMaxShardSentenceLength) {
        throw std::invalid_argument(name + ": pair " + std::to_string(i + 1) + " has a sentence of " +
                                    std::to_string(length) + " subwords, more than a shard holds (" +
                                    std::to_string(kMaxShardSentenceLength) + ")");
      }
      for (int64_t k = 0; k < length; ++k) {
        const int32_t id = side->data(i)[k];
        if (id < 0 || id >= vocab_size) {
          throw std::invalid_argument(name + ": id " + std::to_string(id) + " outside the vocabulary of " +
                                      std::to_string(vocab_size));
        }
      }
      owned->ids.insert(owned->ids.end(), side->data(i), side->data(i) + length);
      (side == &data.source ? owned->source_lengths : owned->target_lengths).push_back(static_cast<uint16_t>(length));
    }
    owned->pair_offsets.push_back(static_cast<int64_t>(owned->ids.size()));
    arrays.max_source_length = std::max(arrays.max_source_length, data.source.length(i));
    arrays.max_target_length = std::max(arrays.max_target_length, data.target.length(i));
  }
  arrays.pair_offsets = owned->pair_offsets.data();
  arrays.source_lengths = owned->source_lengths.data();
  arrays.target_lengths = owned->target_lengths.data();
  arrays.ids = owned->ids.data();
  arrays.id_count = static_cast<int64_t>(owned->ids.size());
  return Shard(arrays, vocab_size, std::move(name), std::move(owned));
}

void Shard::read_pair(int64_t i, int64_t* source, int64_t* target) const {
  // A mapped shard's pairs are read with pread, not through the mapping: the kernel maps a whole
  // page-cache folio (up to megabytes) on each fault, so pairs drawn at random would make most of
  // the shard resident in every process that trains on it (BENCHMARKS.md, "Data at scale").
  int64_t bounds[2];
  if (!storage_->read(arrays_.offsets_at + sizeof(int64_t) * static_cast<uint64_t>(i), sizeof bounds, bounds)) {
    bounds[0] = arrays_.pair_offsets[i], bounds[1] = arrays_.pair_offsets[i + 1];
  }
  const int64_t first = bounds[0], end = bounds[1];
  const int64_t sources = source_length(i), targets = target_length(i);
  if (first < 0 || end < first || end > arrays_.id_count || end - first != sources + targets) {
    throw std::runtime_error(name_ + ": corrupt dataset file (pair " + std::to_string(i + 1) +
                             ": offsets disagree with lengths; run `tfm prepare` again to rebuild it)");
  }
  thread_local std::vector<unsigned char> buffer;
  buffer.resize(static_cast<size_t>(end - first) * static_cast<size_t>(arrays_.id_bytes));
  const void* ids = arrays_.ids;
  int64_t at = first;
  if (storage_->read(arrays_.ids_at + static_cast<uint64_t>(first * arrays_.id_bytes), buffer.size(), buffer.data())) {
    ids = buffer.data(), at = 0;
  }
  const auto copy = arrays_.id_bytes == 2 ? copy_ids<uint16_t> : copy_ids<int32_t>;
  const bool inside =
      copy(ids, at, sources, vocab_size_, source) && copy(ids, at + sources, targets, vocab_size_, target);
  if (!inside) {
    throw std::runtime_error(name_ + ": corrupt dataset file (pair " + std::to_string(i + 1) + " has an id outside " +
                             "the vocabulary of " + std::to_string(vocab_size_) +
                             "; run `tfm prepare` again to rebuild it)");
  }
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> Shard::pair_ids(int64_t i) const {
  std::vector<int64_t> source(static_cast<size_t>(source_length(i))), target(static_cast<size_t>(target_length(i)));
  read_pair(i, source.data(), target.data());
  return {std::move(source), std::move(target)};
}

void Shard::verify() const {
  std::call_once(verification_->once, [this] {
    try {
      storage_->verify();
    } catch (...) {
      verification_->failure = std::current_exception();
    }
  });
  if (verification_->failure) std::rethrow_exception(verification_->failure);
}

void Shard::release_pages() const { storage_->release_pages(); }

int64_t total_pairs(const std::vector<Shard>& shards) {
  int64_t pairs = 0;
  for (const Shard& shard : shards) pairs += shard.size();
  return pairs;
}

}  // namespace tfm
