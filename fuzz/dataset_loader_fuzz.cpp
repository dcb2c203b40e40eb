// The prepared-dataset loader (train.bin / valid.bin, data/dataset_file.h): load_dataset, and the
// mapped shard as training reads it (batching over its lengths, collating every batch). Its header
// and payload carry CRC-32s, so random bytes rarely get past them: when the first input byte is
// odd the target rewrites both checksums to match, which lets the fuzzer reach the size, length,
// offset and id checks behind them (what a crafted or buggy-but-checksummed file would hit).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "data/batching.h"
#include "data/dataset_file.h"
#include "fuzz/fuzz_support.h"

namespace {

constexpr size_t kHeaderBytes = 64;

void fix_checksums(std::vector<uint8_t>& file) {
  if (file.size() < kHeaderBytes) return;
  const uint32_t payload = static_cast<uint32_t>(crc32_z(0, file.data() + kHeaderBytes, file.size() - kHeaderBytes));
  std::memcpy(file.data() + 48, &payload, 4);
  uint32_t header = static_cast<uint32_t>(crc32_z(0, file.data(), 52));
  if (file[8] != 1) header = static_cast<uint32_t>(crc32_z(header, file.data() + 56, 8));  // version 2 covers more
  std::memcpy(file.data() + 52, &header, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (data[0] & 1) fix_checksums(file);
  try {
    const auto loaded = tfm::load_dataset(tfm::fuzz::write_scratch("train.bin", file.data(), file.size()));
    const auto& dataset = loaded.data;
    for (const tfm::TokenizedSide* side : {&dataset.source, &dataset.target}) {
      tfm::fuzz::require(static_cast<int64_t>(side->offsets.size()) == dataset.size() + 1,
                         "one offset per pair, plus one");
      for (int64_t i = 0; i < dataset.size(); ++i) {
        tfm::fuzz::require(side->offsets[i] <= side->offsets[i + 1], "offsets ascend");
      }
      tfm::fuzz::require(side->offsets.back() == side->total_tokens(), "the last offset is the token count");
      for (const int32_t id : side->tokens) {
        tfm::fuzz::require(id >= 0 && id < loaded.vocab_size, "every id is inside the vocabulary");
      }
    }
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  try {
    const tfm::Shard shard = tfm::open_shard(tfm::fuzz::write_scratch("shard.bin", file.data(), file.size()));
    tfm::BatchingOptions options;
    options.max_tokens = 1 << 17;  // every pair fits (lengths are uint16)
    const size_t count = tfm::batching_stats(shard, options).batches;
    const auto batches = tfm::make_batches(shard, options, 1);
    tfm::fuzz::require(batches.size() == count, "batching_stats counts the batches make_batches gives");
    for (const auto& rows : batches) tfm::collate(shard, rows);
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
