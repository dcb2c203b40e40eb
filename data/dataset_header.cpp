#include "data/dataset_header.h"

#include <cstring>
#include <stdexcept>

#include "runtime/crc32.h"

namespace tfm {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the dataset format is little-endian");

constexpr char kMagic[8] = {'T', 'F', 'M', 'D', 'A', 'T', 'A', '\0'};
constexpr size_t kHeaderCrcAt = 52;

template <class T>
void put(DatasetHeaderBytes& bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

template <class T>
T get(const DatasetHeaderBytes& bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

uint32_t header_crc(const DatasetHeaderBytes& bytes, uint32_t version) {
  const uint32_t crc = crc32_of(0, bytes.data(), kHeaderCrcAt);
  return version == 1 ? crc : crc32_of(crc, bytes.data() + 56, 8);
}

}  // namespace

const char* const kRebuildHint = " (run `tfm prepare` again to rebuild it)";

uint64_t DatasetHeader::offsets_at() const {
  const uint64_t ids_end = kDatasetHeaderBytes + id_bytes * static_cast<uint64_t>(source_tokens + target_tokens);
  return (ids_end + 7) / 8 * 8;
}

uint64_t DatasetHeader::file_bytes() const {
  const auto P = static_cast<uint64_t>(pairs);
  if (version == 1) {
    return kDatasetHeaderBytes + 16 * (P + 1) + id_bytes * static_cast<uint64_t>(source_tokens + target_tokens);
  }
  return offsets_at() + 8 * (P + 1) + 4 * P;  // offsets, then two uint16 lengths a pair
}

DatasetHeaderBytes encode_header(const DatasetHeader& header) {
  DatasetHeaderBytes bytes{};
  std::memcpy(bytes.data(), kMagic, sizeof kMagic);
  put(bytes, 8, header.version);
  put(bytes, 12, header.id_bytes);
  put(bytes, 16, header.pairs);
  put(bytes, 24, header.source_tokens);
  put(bytes, 32, header.target_tokens);
  put(bytes, 40, header.vocab_size);
  put(bytes, 48, header.payload_crc);
  put(bytes, 56, header.max_source_length);
  put(bytes, 60, header.max_target_length);
  put(bytes, kHeaderCrcAt, header_crc(bytes, header.version));
  return bytes;
}

DatasetHeader decode_header(const DatasetHeaderBytes& bytes, const std::string& path) {
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw std::runtime_error(path + ": not a tfm dataset file (bad magic)" + kRebuildHint);
  }
  DatasetHeader header;
  header.version = get<uint32_t>(bytes, 8);
  if (header.version != 1 && header.version != kDatasetFormatVersion) {
    throw std::runtime_error(path + ": dataset format version " + std::to_string(header.version) +
                             ", this build reads 1 and " + std::to_string(kDatasetFormatVersion) + kRebuildHint);
  }
  if (get<uint32_t>(bytes, kHeaderCrcAt) != header_crc(bytes, header.version)) {
    throw std::runtime_error(path + ": corrupt dataset header (checksum mismatch)" + kRebuildHint);
  }
  header.id_bytes = get<uint32_t>(bytes, 12);
  header.pairs = get<int64_t>(bytes, 16);
  header.source_tokens = get<int64_t>(bytes, 24);
  header.target_tokens = get<int64_t>(bytes, 32);
  header.vocab_size = get<int64_t>(bytes, 40);
  header.payload_crc = get<uint32_t>(bytes, 48);
  header.max_source_length = get<uint32_t>(bytes, 56);
  header.max_target_length = get<uint32_t>(bytes, 60);
  constexpr int64_t kLimit = int64_t{1} << 40;
  for (const int64_t count : {header.pairs, header.source_tokens, header.target_tokens, header.vocab_size}) {
    if (count < 0 || count > kLimit)
      throw std::runtime_error(path + ": corrupt dataset header (bad count)" + kRebuildHint);
  }
  if (header.id_bytes != 2 && header.id_bytes != 4) {
    throw std::runtime_error(path + ": corrupt dataset header (" + std::to_string(header.id_bytes) + "-byte ids)" +
                             kRebuildHint);
  }
  if (header.max_source_length > 65535 || header.max_target_length > 65535) {
    throw std::runtime_error(path + ": corrupt dataset header (bad sentence length)" + kRebuildHint);
  }
  return header;
}

}  // namespace tfm
