#pragma once
// A split written as it is tokenized, in shard files of bounded size, so preparing a corpus holds
// one shard's index (12 bytes a pair) and never the corpus.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset_file.h"

namespace tfm {

/// Default bound on a shard file: a few million pairs, whose batch list training holds at a time.
constexpr uint64_t kDefaultShardBytes = uint64_t{512} << 20;

class SplitWriter {
 public:
  /// Writes split `split` of `dir` (removing the split's files from an earlier preparation):
  /// SPLIT.bin when one shard holds it all, else SPLIT.000.bin, SPLIT.001.bin, ... each at most
  /// `max_shard_bytes` (a single pair larger than that gets a shard of its own).
  SplitWriter(std::string dir, std::string split, int64_t vocab_size, uint64_t max_shard_bytes);
  ~SplitWriter();

  /// Appends a pair (ShardWriter::add's errors).
  void add(const std::vector<int64_t>& source, const std::vector<int64_t>& target);
  /// Puts the last shard in place and returns every file written, in order. std::runtime_error
  /// when a file cannot be written.
  std::vector<std::string> commit();
  int64_t pairs() const { return pairs_; }

 private:
  std::string shard_path(size_t index) const;
  void close_shard();

  std::string dir_, split_;
  int64_t vocab_size_;
  uint64_t max_shard_bytes_;
  std::unique_ptr<ShardWriter> writer_;
  std::vector<std::string> written_;
  int64_t pairs_ = 0;
};

}  // namespace tfm
