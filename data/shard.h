#pragma once
// One run of tokenized pairs as batching and collating read it, wherever its arrays live: mapped
// read-only from a shard file (data/shard_file.h), so every process on a machine shares one copy
// through the page cache, or owned in memory (a validation set tokenized at start-up, tests).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/parallel_dataset.h"

namespace tfm {

/// The arrays of a shard. Pair i's ids are ids[pair_offsets[i] ..): its source ids, then its target ids.
struct ShardArrays {
  int64_t pairs = 0;
  const int64_t* pair_offsets = nullptr;     // [pairs + 1]
  const uint16_t* source_lengths = nullptr;  // [pairs], subwords without eos
  const uint16_t* target_lengths = nullptr;  // [pairs], subwords without bos/eos
  const void* ids = nullptr;                 // [id_count]: uint16 when id_bytes is 2, else int32
  int id_bytes = 2;
  int64_t id_count = 0;
  int64_t max_source_length = 0, max_target_length = 0;  // over all pairs
  int64_t source_tokens = 0, target_tokens = 0;          // subwords over all pairs
  uint64_t offsets_at = 0, ids_at = 0;                   // where pair_offsets and ids start in the file
};

/// Longest sentence a shard holds: lengths are stored as uint16.
constexpr int64_t kMaxShardSentenceLength = 65535;
/// Most pairs a shard holds: batching numbers them with uint32.
constexpr int64_t kMaxShardPairs = 4294967295;

/// What holds a shard's arrays: a mapped file, or vectors in memory.
class ShardStorage {
 public:
  virtual ~ShardStorage() = default;
  /// Checks the stored checksum; std::runtime_error naming the file on a mismatch.
  virtual void verify() const {}
  /// Hands mapped pages back to the page cache.
  virtual void release_pages() const {}
  /// Copies file bytes [at, at + size) to `out` from the page cache without going through the
  /// mapping (std::runtime_error naming the file when it cannot); false for a shard in memory.
  virtual bool read(uint64_t at, size_t size, void* out) const {
    (void)at, (void)size, (void)out;
    return false;
  }
};

class Shard {
 public:
  /// `storage` keeps the arrays alive. `name` is what messages call the shard (its file's path).
  Shard(ShardArrays arrays, int64_t vocab_size, std::string name, std::shared_ptr<const ShardStorage> storage);

  /// A copy of `data` in memory. std::invalid_argument when a sentence is longer than
  /// kMaxShardSentenceLength or an id is outside [0, vocab_size).
  static Shard from_dataset(const ParallelDataset& data, int64_t vocab_size, std::string name);

  int64_t size() const { return arrays_.pairs; }
  int64_t source_length(int64_t i) const { return arrays_.source_lengths[i]; }
  int64_t target_length(int64_t i) const { return arrays_.target_lengths[i]; }
  int64_t max_source_length() const { return arrays_.max_source_length; }
  int64_t max_target_length() const { return arrays_.max_target_length; }
  int64_t source_tokens() const { return arrays_.source_tokens; }
  int64_t target_tokens() const { return arrays_.target_tokens; }
  int64_t vocab_size() const { return vocab_size_; }
  const std::string& name() const { return name_; }

  /// Pair i's ids, widened: source_length(i) ids into `source`, target_length(i) into `target`.
  /// std::runtime_error naming the shard when its offsets disagree with its lengths or an id is
  /// outside the vocabulary: a damaged file stops with a message, never reads out of bounds.
  void read_pair(int64_t i, int64_t* source, int64_t* target) const;
  /// Pair i's ids as vectors, source then target (validation texts, tests).
  std::pair<std::vector<int64_t>, std::vector<int64_t>> pair_ids(int64_t i) const;
  std::vector<int64_t> source_ids(int64_t i) const { return pair_ids(i).first; }
  std::vector<int64_t> target_ids(int64_t i) const { return pair_ids(i).second; }

  /// Checks the stored checksum once (later calls return at once, or rethrow its failure).
  /// std::runtime_error naming the file on a mismatch. Thread-safe.
  void verify() const;
  /// Hands the pages of a mapped shard back to the page cache (they come back on the next read),
  /// so a process that went through many shards holds only the ones it reads now.
  void release_pages() const;

 private:
  struct Verification;
  ShardArrays arrays_;
  int64_t vocab_size_ = 0;
  std::string name_;
  std::shared_ptr<const ShardStorage> storage_;
  std::shared_ptr<Verification> verification_;
};

/// Pairs over all shards.
int64_t total_pairs(const std::vector<Shard>& shards);

}  // namespace tfm
