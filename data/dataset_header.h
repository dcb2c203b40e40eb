#pragma once
// The 64-byte header of a dataset file (data/dataset_file.h), little-endian:
//
//   offset  bytes  field
//   0       8      magic "TFMDATA\0"
//   8       4      format version: 1 (read only) or 2
//   12      4      bytes per id: 2 (uint16, when the vocabulary has <= 65536 ids) or 4 (int32)
//   16      8      pairs P
//   24      8      source subwords Ns
//   32      8      target subwords Nt
//   40      8      vocabulary size V (of the SentencePiece model stored beside the file)
//   48      4      CRC-32 of the payload, bytes [64, end) (zlib's crc32)
//   52      4      CRC-32 of header bytes [0, 52), and in version 2 also of [56, 64)
//   56      4      version 2: longest source sentence (version 1: zero)
//   60      4      version 2: longest target sentence (version 1: zero)
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tfm {

constexpr size_t kDatasetHeaderBytes = 64;
/// The format version this build writes; it also reads version 1.
constexpr uint32_t kDatasetFormatVersion = 2;

struct DatasetHeader {
  uint32_t version = kDatasetFormatVersion;
  uint32_t id_bytes = 2;
  int64_t pairs = 0, source_tokens = 0, target_tokens = 0, vocab_size = 0;
  uint32_t payload_crc = 0;
  uint32_t max_source_length = 0, max_target_length = 0;

  /// Version 2: where the pair offsets start (after the ids, aligned to 8 bytes).
  uint64_t offsets_at() const;
  /// The file's size in bytes, as the header says.
  uint64_t file_bytes() const;
};

using DatasetHeaderBytes = std::array<unsigned char, kDatasetHeaderBytes>;

DatasetHeaderBytes encode_header(const DatasetHeader& header);
/// Checks magic, version, checksum and counts; std::runtime_error naming `path` otherwise.
DatasetHeader decode_header(const DatasetHeaderBytes& bytes, const std::string& path);

/// " (run `tfm prepare` again to rebuild it)": how every damaged-file message ends.
extern const char* const kRebuildHint;

}  // namespace tfm
