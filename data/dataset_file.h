#pragma once
// The binary file of one prepared split (train.bin, valid.bin). Layout, little-endian:
//
//   offset  bytes  field
//   0       8      magic "TFMDATA\0"
//   8       4      format version (kDatasetFormatVersion)
//   12      4      bytes per id: 2 (uint16, when the vocabulary has <= 65536 ids) or 4 (int32)
//   16      8      pairs P
//   24      8      source subwords Ns
//   32      8      target subwords Nt
//   40      8      vocabulary size V (of the SentencePiece model stored beside the file)
//   48      4      CRC-32 of the payload (zlib's crc32)
//   52      4      CRC-32 of header bytes [0, 52)
//   56      8      reserved, zero
//   64             payload: source offsets int64[P+1], target offsets int64[P+1],
//                  source ids [Ns], target ids [Nt]
//
// Size: 64 + 16 (P + 1) + id_bytes (Ns + Nt) bytes. WMT14 En-De with a 32k vocabulary
// (P = 4.5M, Ns + Nt = 280M) is 0.63 GB on disk and 1.2 GB once loaded as int32.
#include <cstdint>
#include <string>

#include "data/parallel_dataset.h"

namespace tfm {

/// The format version this build writes and reads.
constexpr uint32_t kDatasetFormatVersion = 1;

/// Writes `data` to `path` durably (runtime/durable_file.h: a crash never leaves half a file). Ids are stored as uint16
/// when `vocab_size` <= 65536, else int32. Throws std::invalid_argument when an id is outside [0, vocab_size),
/// std::runtime_error when the file cannot be written.
void save_dataset(const ParallelDataset& data, int64_t vocab_size, const std::string& path);

/// A split read back from its file.
struct LoadedDataset {
  ParallelDataset data;
  int64_t vocab_size = 0;
};

/// Reads a file written by save_dataset, verifying the magic, version, sizes and checksums.
/// Throws std::runtime_error naming `path` for a missing, truncated, corrupt or wrong-version file.
LoadedDataset load_dataset(const std::string& path);

}  // namespace tfm
