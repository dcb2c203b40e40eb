#include "data/dataset_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include "tests/data_test_support.h"

namespace tfm {
namespace {

using testing::error_of;

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_same(const ParallelDataset& a, const ParallelDataset& b) {
  EXPECT_EQ(a.source.tokens, b.source.tokens);
  EXPECT_EQ(a.source.offsets, b.source.offsets);
  EXPECT_EQ(a.target.tokens, b.target.tokens);
  EXPECT_EQ(a.target.offsets, b.target.offsets);
}

/// Rewrites a version-2 header's checksum (bytes [0, 52) and [56, 64)) after an edit.
void fix_header_checksum(std::string& bytes) {
  auto crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), 52));
  crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data() + 56), 8));
  std::memcpy(bytes.data() + 52, &crc, sizeof crc);
}

/// Rewrites the payload checksum, then the header's, after an edit of the payload.
void fix_payload_checksum(std::string& bytes) {
  const auto crc =
      static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data() + 64), bytes.size() - 64));
  std::memcpy(bytes.data() + 48, &crc, sizeof crc);
  fix_header_checksum(bytes);
}

class DatasetFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = testing::random_dataset(3000, 50, 7);
    save_dataset(data_, 1000, path_);
    saved_ = read_bytes(path_);
  }
  /// What loading the file gives once `edit` has changed the bytes save_dataset wrote.
  std::string error_after(const std::function<void(std::string&)>& edit) {
    std::string bytes = saved_;
    edit(bytes);
    testing::write_text(path_, bytes);
    return error_of<std::runtime_error>([&] { load_dataset(path_); });
  }
  testing::TempDir dir_;
  std::string path_ = (dir_ / "train.bin").string();
  ParallelDataset data_;
  std::string saved_;
};

TEST_F(DatasetFileTest, RoundTripsWithTwoByteIdsAndTheDocumentedSize) {
  const LoadedDataset loaded = load_dataset(path_);
  expect_same(loaded.data, data_);
  EXPECT_EQ(loaded.vocab_size, 1000);
  const int64_t tokens = data_.source.total_tokens() + data_.target.total_tokens();
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path_)),
            (64 + 2 * tokens + 7) / 8 * 8 + 8 * (3000 + 1) + 4 * 3000);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

TEST_F(DatasetFileTest, LargeVocabulariesUseFourByteIds) {
  const ParallelDataset big = testing::random_dataset(100, 20, 3, 100000);
  save_dataset(big, 100000, path_);
  expect_same(load_dataset(path_).data, big);
  const int64_t tokens = big.source.total_tokens() + big.target.total_tokens();
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path_)), (64 + 4 * tokens + 7) / 8 * 8 + 8 * 101 + 4 * 100);
}

TEST_F(DatasetFileTest, EmptyDatasetRoundTrips) {
  save_dataset(ParallelDataset{}, 1000, path_);
  EXPECT_EQ(load_dataset(path_).data.size(), 0);
}

TEST_F(DatasetFileTest, CorruptPayloadByteFailsTheChecksum) {
  const std::string message = error_after([](std::string& bytes) { bytes[bytes.size() - 100] ^= 0x10; });
  EXPECT_NE(message.find(path_ + ": corrupt dataset file (checksum mismatch"), std::string::npos) << message;
}

TEST_F(DatasetFileTest, TruncatedFileSaysSo) {
  const std::string message = error_after([](std::string& bytes) { bytes.resize(bytes.size() / 2); });
  EXPECT_NE(message.find(path_ + ": truncated dataset file"), std::string::npos) << message;
  const std::string tiny = error_after([](std::string& bytes) { bytes.resize(10); });
  EXPECT_NE(tiny.find(path_ + ": truncated"), std::string::npos) << tiny;
}

TEST_F(DatasetFileTest, OtherVersionMagicAndHeaderAreRejected) {
  const std::string version = error_after([](std::string& bytes) { bytes[8] = 3; });
  EXPECT_NE(version.find(path_ + ": dataset format version 3, this build reads 1 and 2"), std::string::npos) << version;
  const std::string magic = error_after([](std::string& bytes) { bytes[0] = 'X'; });
  EXPECT_NE(magic.find(path_ + ": not a tfm dataset file"), std::string::npos) << magic;
  const std::string header = error_after([](std::string& bytes) { bytes[16] ^= 1; });  // the pair count
  EXPECT_NE(header.find(path_ + ": corrupt dataset header"), std::string::npos) << header;
  const std::string missing = error_of<std::runtime_error>([&] { load_dataset(path_ + ".missing"); });
  EXPECT_NE(missing.find(path_ + ".missing: cannot open"), std::string::npos) << missing;
}

TEST_F(DatasetFileTest, ErrorsAreOneLine) {
  const std::string message = error_after([](std::string& bytes) { bytes[200] ^= 1; });
  ASSERT_FALSE(message.empty());
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST_F(DatasetFileTest, IdsOutsideTheVocabularyAreRejectedEvenWithValidChecksums) {
  // A file whose checksums are right but whose header claims a smaller vocabulary than its ids
  // use (found by fuzz/dataset_loader_fuzz.cpp): it would index past the embedding table.
  const std::string message = error_after([](std::string& bytes) {
    const int64_t vocab = 10;
    std::memcpy(bytes.data() + 40, &vocab, sizeof vocab);
    fix_header_checksum(bytes);
  });
  EXPECT_NE(message.find(path_ + ": corrupt dataset file (pair "), std::string::npos) << message;
  EXPECT_NE(message.find("has an id outside the vocabulary of 10"), std::string::npos) << message;
}

TEST_F(DatasetFileTest, OffsetsThatDisagreeWithLengthsAreRejectedEvenWithValidChecksums) {
  const std::string message = error_after([](std::string& bytes) {
    const int64_t tokens = 0;  // the offsets follow the ids: the first pair's end offset, zeroed
    int64_t pairs = 0;
    std::memcpy(&pairs, bytes.data() + 16, sizeof pairs);
    const size_t offsets_at = bytes.size() - 8 * (pairs + 1) - 4 * pairs;
    std::memcpy(bytes.data() + offsets_at + 8, &tokens, sizeof tokens);
    fix_payload_checksum(bytes);
  });
  EXPECT_NE(message.find(path_ + ": corrupt dataset file (pair 1: offsets disagree"), std::string::npos) << message;
  // Offsets far apart in both directions (found by fuzzing): an error, not an overflow.
  const std::string far = error_after([](std::string& bytes) {
    int64_t pairs = 0;
    std::memcpy(&pairs, bytes.data() + 16, sizeof pairs);
    const size_t offsets_at = bytes.size() - 8 * (pairs + 1) - 4 * pairs;
    const int64_t offsets[2] = {int64_t{1} << 57, std::numeric_limits<int64_t>::min() + 4};
    std::memcpy(bytes.data() + offsets_at, offsets, sizeof offsets);
    fix_payload_checksum(bytes);
  });
  EXPECT_NE(far.find(path_ + ": corrupt dataset file (pair 1: offsets disagree"), std::string::npos) << far;
}

TEST_F(DatasetFileTest, OpeningMapsTheFileAndLeavesTheChecksumToVerify) {
  std::string bytes = saved_;
  bytes[bytes.size() - 100] ^= 0x10;
  testing::write_text(path_, bytes);
  const Shard shard = open_shard(path_);  // the header and size are right: opening is cheap
  EXPECT_EQ(shard.size(), 3000);
  EXPECT_EQ(shard.max_source_length(), 50);
  const std::string message = error_of<std::runtime_error>([&] { shard.verify(); });
  EXPECT_NE(message.find(path_ + ": corrupt dataset file (checksum mismatch"), std::string::npos) << message;
  EXPECT_EQ(error_of<std::runtime_error>([&] { shard.verify(); }), message);  // checked once, remembered
}

/// The bytes of `data` in format version 1 (offsets per side, then ids per side), as tfm wrote it
/// before shards, with its checksums.
std::string version1_bytes(const ParallelDataset& data, int64_t vocab_size) {
  std::string payload;
  auto append = [&payload](const void* bytes, size_t size) { payload.append(static_cast<const char*>(bytes), size); };
  for (const TokenizedSide* side : {&data.source, &data.target}) {
    append(side->offsets.data(), side->offsets.size() * sizeof(int64_t));
  }
  for (const TokenizedSide* side : {&data.source, &data.target}) {
    for (const int32_t id : side->tokens) {
      const auto narrow = static_cast<uint16_t>(id);
      append(&narrow, sizeof narrow);
    }
  }
  std::string header(64, '\0');
  std::memcpy(header.data(), "TFMDATA", 8);
  const uint32_t version = 1, id_bytes = 2;
  const int64_t counts[4] = {data.size(), data.source.total_tokens(), data.target.total_tokens(), vocab_size};
  std::memcpy(header.data() + 8, &version, 4);
  std::memcpy(header.data() + 12, &id_bytes, 4);
  std::memcpy(header.data() + 16, counts, sizeof counts);
  const auto payload_crc =
      static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(payload.data()), payload.size()));
  std::memcpy(header.data() + 48, &payload_crc, 4);
  const auto header_crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(header.data()), 52));
  std::memcpy(header.data() + 52, &header_crc, 4);
  return header + payload;
}

TEST_F(DatasetFileTest, VersionOneFilesStillLoad) {
  testing::write_text(path_, version1_bytes(data_, 1000));
  expect_same(load_dataset(path_).data, data_);
  const Shard shard = open_shard(path_);
  EXPECT_EQ(shard.size(), 3000);
  EXPECT_EQ(shard.source_ids(7), data_.source.ids(7));
  EXPECT_EQ(shard.target_ids(2999), data_.target.ids(2999));
  std::string damaged = version1_bytes(data_, 1000);
  damaged[damaged.size() - 10] ^= 1;
  testing::write_text(path_, damaged);
  const std::string message = error_of<std::runtime_error>([&] { open_shard(path_); });
  EXPECT_NE(message.find(path_ + ": corrupt dataset file (checksum mismatch"), std::string::npos) << message;
}

TEST_F(DatasetFileTest, SaveRejectsIdsOutsideTheVocabulary) {
  EXPECT_THROW(save_dataset(data_, 500, path_), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
