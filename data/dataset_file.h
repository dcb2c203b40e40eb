#pragma once
// The binary file of one shard of a prepared split (train.bin or train.000.bin ..., valid.bin).
// After the 64-byte header (data/dataset_header.h), format version 2 holds:
//
//   ids            id_bytes x (Ns + Nt)   pair by pair: the source ids, then the target ids
//   (zero padding to a multiple of 8 bytes)
//   pair offsets   int64 [P + 1]          where each pair's ids start (in ids)
//   source lengths uint16 [P]
//   target lengths uint16 [P]
//
// The ids come first so that a writer streams them without holding the corpus; the index (12
// bytes a pair) follows. A reader maps the file read-only: batching touches only the lengths,
// collating only the pairs it takes, and every process on the machine shares the pages. Version 1
// files (offsets per side, then ids per side) are still read, into memory.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/parallel_dataset.h"
#include "data/shard.h"

namespace tfm {

/// Writes one shard file, pair by pair, durably (runtime/durable_file.h): only the index is held
/// in memory. Ids are stored as uint16 when `vocab_size` <= 65536, else int32.
class ShardWriter {
 public:
  ShardWriter(const std::string& path, int64_t vocab_size);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  /// Appends a pair. std::invalid_argument when an id is outside [0, vocab_size) or a side is
  /// longer than kMaxShardSentenceLength.
  void add(const std::vector<int64_t>& source, const std::vector<int64_t>& target);
  int64_t pairs() const;
  /// The file's size if it were committed now.
  uint64_t bytes() const;
  /// Writes the index and header and puts the file in place; std::runtime_error when it cannot.
  void commit();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Opens a shard file: version 2 is mapped read-only, version 1 read into memory. The header and
/// the file's size are checked here; the payload checksum when Shard::verify() is called (it
/// reads the whole file, which for a large corpus is better done in the background).
/// std::runtime_error naming `path` for a missing, truncated, corrupt or wrong-version file.
Shard open_shard(const std::string& path);

/// Writes `data` as one shard file.
void save_dataset(const ParallelDataset& data, int64_t vocab_size, const std::string& path);

/// A shard file read back whole.
struct LoadedDataset {
  ParallelDataset data;
  int64_t vocab_size = 0;
};

/// Reads a shard file into memory, verifying everything: checksums, offsets, lengths and ids.
LoadedDataset load_dataset(const std::string& path);

}  // namespace tfm
