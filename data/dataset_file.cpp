#include "data/dataset_file.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "runtime/durable_file.h"

namespace tfm {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the dataset format is little-endian");

constexpr char kMagic[8] = {'T', 'F', 'M', 'D', 'A', 'T', 'A', '\0'};
constexpr size_t kHeaderBytes = 64;
constexpr size_t kHeaderCrcAt = 52;    // the header checksum covers bytes [0, 52)
constexpr size_t kBlockIds = 1 << 20;  // ids converted and checksummed per block
using HeaderBytes = std::array<unsigned char, kHeaderBytes>;

struct Header {
  uint32_t version = kDatasetFormatVersion;
  uint32_t id_bytes = 4;
  int64_t pairs = 0, source_tokens = 0, target_tokens = 0, vocab_size = 0;
  uint32_t payload_crc = 0;

  uint64_t file_bytes() const {
    return kHeaderBytes + 16 * static_cast<uint64_t>(pairs + 1) +
           id_bytes * static_cast<uint64_t>(source_tokens + target_tokens);
  }
};

uint32_t crc_of(uint32_t crc, const void* bytes, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(bytes), size));
}

template <class T>
void put(HeaderBytes& bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

template <class T>
T get(const HeaderBytes& bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

HeaderBytes encode_header(const Header& header) {
  HeaderBytes bytes{};
  std::memcpy(bytes.data(), kMagic, sizeof kMagic);
  put(bytes, 8, header.version);
  put(bytes, 12, header.id_bytes);
  put(bytes, 16, header.pairs);
  put(bytes, 24, header.source_tokens);
  put(bytes, 32, header.target_tokens);
  put(bytes, 40, header.vocab_size);
  put(bytes, 48, header.payload_crc);
  put(bytes, kHeaderCrcAt, crc_of(0, bytes.data(), kHeaderCrcAt));
  return bytes;
}

Header decode_header(const HeaderBytes& bytes, const std::string& path) {
  const std::string hint = " (run `tfm prepare` again to rebuild it)";
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw std::runtime_error(path + ": not a tfm dataset file (bad magic)" + hint);
  }
  Header header;
  header.version = get<uint32_t>(bytes, 8);
  if (header.version != kDatasetFormatVersion) {
    throw std::runtime_error(path + ": dataset format version " + std::to_string(header.version) +
                             ", this build reads " + std::to_string(kDatasetFormatVersion) + hint);
  }
  if (get<uint32_t>(bytes, kHeaderCrcAt) != crc_of(0, bytes.data(), kHeaderCrcAt)) {
    throw std::runtime_error(path + ": corrupt dataset header (checksum mismatch)" + hint);
  }
  header.id_bytes = get<uint32_t>(bytes, 12);
  header.pairs = get<int64_t>(bytes, 16);
  header.source_tokens = get<int64_t>(bytes, 24);
  header.target_tokens = get<int64_t>(bytes, 32);
  header.vocab_size = get<int64_t>(bytes, 40);
  header.payload_crc = get<uint32_t>(bytes, 48);
  constexpr int64_t kLimit = int64_t{1} << 40;
  for (const int64_t count : {header.pairs, header.source_tokens, header.target_tokens, header.vocab_size}) {
    if (count < 0 || count > kLimit) throw std::runtime_error(path + ": corrupt dataset header (bad count)" + hint);
  }
  if (header.id_bytes != 2 && header.id_bytes != 4) {
    throw std::runtime_error(path + ": corrupt dataset header (" + std::to_string(header.id_bytes) + "-byte ids)" +
                             hint);
  }
  return header;
}

/// An output file that keeps a running CRC-32 of what it writes.
struct ChecksummedWriter {
  DurableFileWriter& out;
  uint32_t crc = 0;
  void write(const void* bytes, size_t size) {
    crc = crc_of(crc, bytes, size);
    out.write(bytes, size);
  }
};

/// Writes ids narrowed to `Id`, a block at a time.
template <class Id>
void write_ids(ChecksummedWriter& writer, const std::vector<int32_t>& ids) {
  std::vector<Id> block;
  for (size_t begin = 0; begin < ids.size(); begin += kBlockIds) {
    const size_t end = std::min(ids.size(), begin + kBlockIds);
    block.assign(ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.begin() + static_cast<std::ptrdiff_t>(end));
    writer.write(block.data(), block.size() * sizeof(Id));
  }
}

void check_ids(const TokenizedSide& side, int64_t vocab_size, const std::string& path) {
  for (const int32_t id : side.tokens) {
    if (id < 0 || id >= vocab_size) {
      throw std::invalid_argument(path + ": id " + std::to_string(id) + " outside the vocabulary of " +
                                  std::to_string(vocab_size));
    }
  }
}

/// An input file that keeps a running CRC-32 of what it reads.
struct ChecksummedReader {
  std::ifstream in;
  std::string path;
  uint32_t crc = 0;
  void read(void* bytes, size_t size) {
    if (!in.read(static_cast<char*>(bytes), static_cast<std::streamsize>(size))) {
      throw std::runtime_error(path + ": truncated dataset file (run `tfm prepare` again to rebuild it)");
    }
    crc = crc_of(crc, bytes, size);
  }
};

/// Reads `count` ids stored as `Id` into `ids` (int32), a block at a time.
template <class Id>
void read_ids(ChecksummedReader& reader, int64_t count, std::vector<int32_t>& ids) {
  ids.resize(static_cast<size_t>(count));
  if constexpr (sizeof(Id) == sizeof(int32_t)) {
    reader.read(ids.data(), ids.size() * sizeof(int32_t));
  } else {
    std::vector<Id> block(kBlockIds);
    for (size_t begin = 0; begin < ids.size(); begin += kBlockIds) {
      const size_t size = std::min(ids.size() - begin, kBlockIds);
      reader.read(block.data(), size * sizeof(Id));
      std::copy(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(size),
                ids.begin() + static_cast<std::ptrdiff_t>(begin));
    }
  }
}

void check_offsets(const TokenizedSide& side, const std::string& path) {
  const auto& offsets = side.offsets;
  const bool ordered = std::is_sorted(offsets.begin(), offsets.end());
  if (offsets.front() != 0 || !ordered || offsets.back() != side.total_tokens()) {
    throw std::runtime_error(path + ": corrupt dataset file (inconsistent sentence offsets)");
  }
}

}  // namespace

void save_dataset(const ParallelDataset& data, int64_t vocab_size, const std::string& path) {
  check_ids(data.source, vocab_size, path);
  check_ids(data.target, vocab_size, path);
  Header header;
  header.id_bytes = vocab_size <= 65536 ? 2 : 4;
  header.pairs = data.size();
  header.source_tokens = data.source.total_tokens();
  header.target_tokens = data.target.total_tokens();
  header.vocab_size = vocab_size;

  DurableFileWriter file(path);
  ChecksummedWriter writer{file};
  const HeaderBytes placeholder{};
  file.write(placeholder.data(), kHeaderBytes);
  for (const TokenizedSide* side : {&data.source, &data.target}) {
    writer.write(side->offsets.data(), side->offsets.size() * sizeof(int64_t));
  }
  for (const TokenizedSide* side : {&data.source, &data.target}) {
    header.id_bytes == 2 ? write_ids<uint16_t>(writer, side->tokens) : write_ids<int32_t>(writer, side->tokens);
  }
  header.payload_crc = writer.crc;
  const HeaderBytes bytes = encode_header(header);
  file.write_at(0, bytes.data(), kHeaderBytes);
  file.commit();
}

LoadedDataset load_dataset(const std::string& path) {
  ChecksummedReader reader{std::ifstream(path, std::ios::binary), path};
  if (!reader.in) throw std::runtime_error(path + ": cannot open dataset file (" + std::strerror(errno) + ")");
  HeaderBytes bytes{};
  if (!reader.in.read(reinterpret_cast<char*>(bytes.data()), kHeaderBytes)) {
    throw std::runtime_error(path + ": truncated dataset file (shorter than its header)");
  }
  const Header header = decode_header(bytes, path);
  std::error_code error;
  const uint64_t actual = std::filesystem::file_size(path, error);
  if (!error && actual != header.file_bytes()) {
    throw std::runtime_error(path + ": " + (actual < header.file_bytes() ? "truncated" : "corrupt") +
                             " dataset file (" + std::to_string(actual) + " bytes, the header says " +
                             std::to_string(header.file_bytes()) + "; run `tfm prepare` again to rebuild it)");
  }
  LoadedDataset loaded;
  loaded.vocab_size = header.vocab_size;
  ParallelDataset& data = loaded.data;
  for (TokenizedSide* side : {&data.source, &data.target}) {
    side->offsets.resize(static_cast<size_t>(header.pairs + 1));
    reader.read(side->offsets.data(), side->offsets.size() * sizeof(int64_t));
  }
  for (TokenizedSide* side : {&data.source, &data.target}) {
    const int64_t count = side == &data.source ? header.source_tokens : header.target_tokens;
    header.id_bytes == 2 ? read_ids<uint16_t>(reader, count, side->tokens)
                         : read_ids<int32_t>(reader, count, side->tokens);
  }
  if (reader.crc != header.payload_crc) {
    throw std::runtime_error(path +
                             ": corrupt dataset file (checksum mismatch; run `tfm prepare` again to rebuild it)");
  }
  check_offsets(data.source, path);
  check_offsets(data.target, path);
  // Checked again on load: an id outside the vocabulary would index past the embedding table.
  for (const TokenizedSide* side : {&data.source, &data.target}) {
    for (const int32_t id : side->tokens) {
      if (id < 0 || id >= header.vocab_size) {
        throw std::runtime_error(path + ": corrupt dataset file (id " + std::to_string(id) +
                                 " outside the vocabulary of " + std::to_string(header.vocab_size) +
                                 "; run `tfm prepare` again to rebuild it)");
      }
    }
  }
  return loaded;
}

}  // namespace tfm
