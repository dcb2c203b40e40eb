#include "data/dataset_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "data/dataset_file_v1.h"
#include "data/dataset_header.h"
#include "runtime/crc32.h"
#include "runtime/durable_file.h"
#include "text/option_names.h"

namespace tfm {
namespace {

std::string system_error(const std::string& path, const std::string& what) {
  return path + ": " + what + " (" + std::strerror(errno) + ")";
}

/// A version-2 file mapped read-only. Its descriptor stays open for verify(), which reads with
/// pread rather than through the mapping, so checking a shard does not make it resident.
class MappedShardFile : public ShardStorage {
 public:
  MappedShardFile(std::string path, int fd, size_t size, uint32_t payload_crc)
      : path_(std::move(path)), fd_(fd), size_(size), payload_crc_(payload_crc) {
    base_ = mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (base_ == MAP_FAILED) {
      const std::string message = system_error(path_, "cannot map dataset file");
      close(fd_);
      throw std::runtime_error(message);
    }
  }
  ~MappedShardFile() override {
    munmap(base_, size_);
    close(fd_);
  }
  MappedShardFile(const MappedShardFile&) = delete;
  MappedShardFile& operator=(const MappedShardFile&) = delete;

  const unsigned char* bytes() const { return static_cast<const unsigned char*>(base_); }

  void verify() const override {
    posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
    std::vector<unsigned char> block(size_t{4} << 20);
    uint32_t crc = 0;
    for (size_t at = kDatasetHeaderBytes; at < size_;) {
      const ssize_t got = pread(fd_, block.data(), std::min(block.size(), size_ - at), static_cast<off_t>(at));
      if (got <= 0) throw std::runtime_error(system_error(path_, "cannot read dataset file"));
      crc = crc32_of(crc, block.data(), static_cast<size_t>(got));
      at += static_cast<size_t>(got);
    }
    if (crc != payload_crc_) {
      throw std::runtime_error(path_ + ": corrupt dataset file (checksum mismatch)" + kRebuildHint);
    }
  }

  void release_pages() const override { madvise(base_, size_, MADV_DONTNEED); }

  bool read(uint64_t at, size_t size, void* out) const override {
    auto* bytes = static_cast<unsigned char*>(out);
    while (size > 0) {
      const ssize_t got = pread(fd_, bytes, size, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw std::runtime_error(system_error(path_, "cannot read dataset file"));
      bytes += got, at += static_cast<uint64_t>(got), size -= static_cast<size_t>(got);
    }
    return true;
  }

 private:
  std::string path_;
  int fd_;
  size_t size_;
  uint32_t payload_crc_;
  void* base_ = nullptr;
};

DatasetHeader read_header(int fd, const std::string& path, uint64_t size) {
  DatasetHeaderBytes bytes{};
  if (size < kDatasetHeaderBytes ||
      pread(fd, bytes.data(), kDatasetHeaderBytes, 0) != static_cast<ssize_t>(kDatasetHeaderBytes)) {
    throw std::runtime_error(path + ": truncated dataset file (shorter than its header)" + kRebuildHint);
  }
  const DatasetHeader header = decode_header(bytes, path);
  if (size != header.file_bytes()) {
    throw std::runtime_error(path + ": " + (size < header.file_bytes() ? "truncated" : "corrupt") + " dataset file (" +
                             std::to_string(size) + " bytes, the header says " + std::to_string(header.file_bytes()) +
                             ";" + std::string(kRebuildHint).substr(2));
  }
  return header;
}

}  // namespace

struct ShardWriter::State {
  DurableFileWriter file;
  DatasetHeader header;
  uint32_t crc = 0;
  std::vector<int64_t> offsets{0};
  std::vector<uint16_t> source_lengths, target_lengths;
  std::vector<unsigned char> narrowed;  // one pair's ids as stored

  State(const std::string& path, int64_t vocab_size) : file(path) {
    header.vocab_size = vocab_size;
    header.id_bytes = vocab_size <= 65536 ? 2 : 4;
    const DatasetHeaderBytes placeholder{};
    file.write(placeholder.data(), placeholder.size());
  }
  void write(const void* bytes, size_t size) {
    crc = crc32_of(crc, bytes, size);
    file.write(bytes, size);
  }
  /// Appends `ids` in the stored width to `narrowed`.
  void narrow(const std::vector<int64_t>& ids) {
    for (const int64_t id : ids) {
      if (id < 0 || id >= header.vocab_size) {
        throw std::invalid_argument(file.path() + ": id " + std::to_string(id) + " outside the vocabulary of " +
                                    std::to_string(header.vocab_size));
      }
      const auto value = static_cast<uint32_t>(id);
      const size_t at = narrowed.size();
      narrowed.resize(at + header.id_bytes);
      std::memcpy(narrowed.data() + at, &value, header.id_bytes);  // little-endian: the low bytes
    }
  }
};

ShardWriter::ShardWriter(const std::string& path, int64_t vocab_size)
    : state_(std::make_unique<State>(path, vocab_size)) {}

ShardWriter::~ShardWriter() = default;

void ShardWriter::add(const std::vector<int64_t>& source, const std::vector<int64_t>& target) {
  State& s = *state_;
  for (const auto* side : {&source, &target}) {
    if (static_cast<int64_t>(side->size()) > kMaxShardSentenceLength) {
      throw std::invalid_argument(s.file.path() + ": a sentence of " + std::to_string(side->size()) +
                                  " subwords, more than a shard holds (" + std::to_string(kMaxShardSentenceLength) +
                                  "; lower " + option_name("max_len") + ")");
    }
  }
  if (s.header.pairs >= kMaxShardPairs) {
    throw std::invalid_argument(s.file.path() + ": a shard holds at most " + std::to_string(kMaxShardPairs) +
                                " pairs (lower " + option_name("shard_size") + ")");
  }
  s.narrowed.clear();
  s.narrow(source);
  s.narrow(target);
  s.write(s.narrowed.data(), s.narrowed.size());
  s.offsets.push_back(s.offsets.back() + static_cast<int64_t>(source.size() + target.size()));
  s.source_lengths.push_back(static_cast<uint16_t>(source.size()));
  s.target_lengths.push_back(static_cast<uint16_t>(target.size()));
  DatasetHeader& h = s.header;
  ++h.pairs;
  h.source_tokens += static_cast<int64_t>(source.size());
  h.target_tokens += static_cast<int64_t>(target.size());
  h.max_source_length = std::max(h.max_source_length, static_cast<uint32_t>(source.size()));
  h.max_target_length = std::max(h.max_target_length, static_cast<uint32_t>(target.size()));
}

int64_t ShardWriter::pairs() const { return state_->header.pairs; }

uint64_t ShardWriter::bytes() const { return state_->header.file_bytes(); }

void ShardWriter::commit() {
  State& s = *state_;
  const uint64_t ids_end = kDatasetHeaderBytes + s.header.id_bytes * static_cast<uint64_t>(s.offsets.back());
  const unsigned char zeros[8] = {};
  s.write(zeros, s.header.offsets_at() - ids_end);
  s.write(s.offsets.data(), s.offsets.size() * sizeof(int64_t));
  s.write(s.source_lengths.data(), s.source_lengths.size() * sizeof(uint16_t));
  s.write(s.target_lengths.data(), s.target_lengths.size() * sizeof(uint16_t));
  s.header.payload_crc = s.crc;
  const DatasetHeaderBytes bytes = encode_header(s.header);
  s.file.write_at(0, bytes.data(), bytes.size());
  s.file.commit();
}

Shard open_shard(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(system_error(path, "cannot open dataset file"));
  DatasetHeader header;
  struct stat status {};
  try {
    if (fstat(fd, &status) != 0) throw std::runtime_error(system_error(path, "cannot read dataset file"));
    header = read_header(fd, path, static_cast<uint64_t>(status.st_size));
  } catch (...) {
    close(fd);
    throw;
  }
  if (header.version == 1) {
    close(fd);
    return read_version1_shard(path, header);
  }
  if (header.pairs > kMaxShardPairs) {
    close(fd);
    throw std::runtime_error(path + ": " + std::to_string(header.pairs) + " pairs, more than a shard holds" +
                             kRebuildHint);
  }
  auto file = std::make_shared<MappedShardFile>(path, fd, static_cast<size_t>(status.st_size), header.payload_crc);
  const unsigned char* base = file->bytes();
  ShardArrays arrays;
  arrays.pairs = header.pairs;
  arrays.ids = base + kDatasetHeaderBytes;
  arrays.id_bytes = static_cast<int>(header.id_bytes);
  arrays.id_count = header.source_tokens + header.target_tokens;
  arrays.pair_offsets = reinterpret_cast<const int64_t*>(base + header.offsets_at());
  arrays.source_lengths = reinterpret_cast<const uint16_t*>(arrays.pair_offsets + header.pairs + 1);
  arrays.target_lengths = arrays.source_lengths + header.pairs;
  arrays.max_source_length = header.max_source_length;
  arrays.max_target_length = header.max_target_length;
  arrays.source_tokens = header.source_tokens;
  arrays.target_tokens = header.target_tokens;
  arrays.offsets_at = header.offsets_at();
  arrays.ids_at = kDatasetHeaderBytes;
  return Shard(arrays, header.vocab_size, path, std::move(file));
}

void save_dataset(const ParallelDataset& data, int64_t vocab_size, const std::string& path) {
  ShardWriter writer(path, vocab_size);
  for (int64_t i = 0; i < data.size(); ++i) writer.add(data.source.ids(i), data.target.ids(i));
  writer.commit();
}

LoadedDataset load_dataset(const std::string& path) {
  const Shard shard = open_shard(path);
  shard.verify();
  LoadedDataset loaded;
  loaded.vocab_size = shard.vocab_size();
  std::vector<int64_t> source, target;
  for (int64_t i = 0; i < shard.size(); ++i) {
    if (shard.source_length(i) > shard.max_source_length() || shard.target_length(i) > shard.max_target_length()) {
      throw std::runtime_error(path + ": corrupt dataset file (pair " + std::to_string(i + 1) +
                               " is longer than the header's longest)" + kRebuildHint);
    }
    source.resize(static_cast<size_t>(shard.source_length(i)));
    target.resize(static_cast<size_t>(shard.target_length(i)));
    shard.read_pair(i, source.data(), target.data());
    loaded.data.append(source, target);
  }
  return loaded;
}

}  // namespace tfm
