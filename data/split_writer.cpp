#include "data/split_writer.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "data/prepared_dir.h"
#include "runtime/durable_file.h"
#include "text/option_names.h"

namespace tfm {

namespace fs = std::filesystem;

SplitWriter::SplitWriter(std::string dir, std::string split, int64_t vocab_size, uint64_t max_shard_bytes)
    : dir_(std::move(dir)), split_(std::move(split)), vocab_size_(vocab_size), max_shard_bytes_(max_shard_bytes) {
  if (max_shard_bytes_ == 0) throw std::invalid_argument(option_name("shard_size") + " must be positive");
  remove_split_files(dir_, split_);
  writer_ = std::make_unique<ShardWriter>(shard_path(0), vocab_size_);
}

SplitWriter::~SplitWriter() = default;

std::string SplitWriter::shard_path(size_t index) const {
  return (fs::path(dir_) / fmt::format("{}.{:03d}.bin", split_, index)).string();
}

void SplitWriter::close_shard() {
  writer_->commit();
  written_.push_back(shard_path(written_.size()));
  writer_.reset();
}

void SplitWriter::add(const std::vector<int64_t>& source, const std::vector<int64_t>& target) {
  // Each pair adds its ids plus 12 bytes of index; padding adds at most 7.
  const uint64_t pair_bytes = (vocab_size_ <= 65536 ? 2 : 4) * (source.size() + target.size()) + 12;
  if (writer_->pairs() > 0 && writer_->bytes() + pair_bytes + 7 > max_shard_bytes_) {
    close_shard();
    writer_ = std::make_unique<ShardWriter>(shard_path(written_.size()), vocab_size_);
  }
  writer_->add(source, target);
  ++pairs_;
}

std::vector<std::string> SplitWriter::commit() {
  close_shard();
  if (written_.size() == 1) {
    const std::string whole = (fs::path(dir_) / (split_ + ".bin")).string();
    rename_durably(written_.front(), whole);
    written_.front() = whole;
  }
  return written_;
}

}  // namespace tfm
