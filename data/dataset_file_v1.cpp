#include "data/dataset_file_v1.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "runtime/crc32.h"

namespace tfm {
namespace {

/// An input file that keeps a running CRC-32 of what it reads.
struct ChecksummedReader {
  std::ifstream in;
  std::string path;
  uint32_t crc = 0;
  void read(void* bytes, size_t size) {
    if (!in.read(static_cast<char*>(bytes), static_cast<std::streamsize>(size))) {
      throw std::runtime_error(path + ": truncated dataset file" + kRebuildHint);
    }
    crc = crc32_of(crc, bytes, size);
  }
};

/// Reads `count` ids stored as `Id` into `ids` (int32).
template <class Id>
void read_ids(ChecksummedReader& reader, int64_t count, std::vector<int32_t>& ids) {
  std::vector<Id> stored(static_cast<size_t>(count));
  reader.read(stored.data(), stored.size() * sizeof(Id));
  ids.assign(stored.begin(), stored.end());
}

void check_offsets(const TokenizedSide& side, const std::string& path) {
  const auto& offsets = side.offsets;
  if (offsets.front() != 0 || !std::is_sorted(offsets.begin(), offsets.end()) ||
      offsets.back() != side.total_tokens()) {
    throw std::runtime_error(path + ": corrupt dataset file (inconsistent sentence offsets)" +
                             std::string(kRebuildHint));
  }
}

}  // namespace

Shard read_version1_shard(const std::string& path, const DatasetHeader& header) {
  ChecksummedReader reader{std::ifstream(path, std::ios::binary), path};
  reader.in.seekg(static_cast<std::streamoff>(kDatasetHeaderBytes));
  if (!reader.in) throw std::runtime_error(path + ": cannot read dataset file");
  ParallelDataset data;
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
    throw std::runtime_error(path + ": corrupt dataset file (checksum mismatch)" + std::string(kRebuildHint));
  }
  check_offsets(data.source, path);
  check_offsets(data.target, path);
  try {
    return Shard::from_dataset(data, header.vocab_size, path);
  } catch (const std::invalid_argument& error) {  // an id outside the vocabulary, a sentence too long
    throw std::runtime_error(std::string(error.what()) + ": corrupt dataset file" + kRebuildHint);
  }
}

}  // namespace tfm
