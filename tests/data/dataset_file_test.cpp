#include "data/dataset_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <functional>

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
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path_)), 64 + 16 * (3000 + 1) + 2 * tokens);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

TEST_F(DatasetFileTest, LargeVocabulariesUseFourByteIds) {
  const ParallelDataset big = testing::random_dataset(100, 20, 3, 100000);
  save_dataset(big, 100000, path_);
  expect_same(load_dataset(path_).data, big);
  const int64_t tokens = big.source.total_tokens() + big.target.total_tokens();
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path_)), 64 + 16 * 101 + 4 * tokens);
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
  const std::string version = error_after([](std::string& bytes) { bytes[8] = 2; });
  EXPECT_NE(version.find(path_ + ": dataset format version 2, this build reads 1"), std::string::npos) << version;
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
    const auto crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), 52));
    std::memcpy(bytes.data() + 52, &crc, sizeof crc);
  });
  EXPECT_NE(message.find(path_ + ": corrupt dataset file (id "), std::string::npos) << message;
  EXPECT_NE(message.find("outside the vocabulary of 10"), std::string::npos) << message;
}

TEST_F(DatasetFileTest, SaveRejectsIdsOutsideTheVocabulary) {
  EXPECT_THROW(save_dataset(data_, 500, path_), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
