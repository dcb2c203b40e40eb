#include "data/prepared_dir.h"

#include <gtest/gtest.h>

#include "data/dataset_file.h"
#include "runtime/durable_file.h"
#include "tests/data_test_support.h"

namespace tfm {
namespace {

using testing::error_of;

/// A prepared directory in `dir` holding `data` as the shards named `files`.
void write_prepared(const std::filesystem::path& dir, const Tokenizer& tokenizer, const ParallelDataset& data,
                    const std::vector<std::string>& files) {
  write_file_durably((dir / kPreparedModelFile).string(), tokenizer.serialized());
  for (const auto& file : files) save_dataset(data, tokenizer.vocab_size(), (dir / file).string());
}

TEST(PreparedDir, ShardsLoadInOrderAndSeveralDirectoriesMakeOneSet) {
  testing::TempDir dir;
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const ParallelDataset data = testing::random_dataset(10, 5, 1, tokenizer.vocab_size());
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  write_prepared(dir / "a", tokenizer, data, {"train.001.bin", "train.000.bin", "valid.bin"});
  write_prepared(dir / "b", tokenizer, data, {"train.bin"});
  const PreparedData a = load_prepared((dir / "a").string());
  ASSERT_EQ(a.train.size(), 2u);
  EXPECT_EQ(std::filesystem::path(a.train[0].name()).filename(), "train.000.bin");
  EXPECT_TRUE(a.valid.has_value());
  const PreparedData both = load_prepared(std::vector<std::string>{(dir / "a").string(), (dir / "b").string()});
  ASSERT_EQ(both.train.size(), 3u);
  EXPECT_EQ(total_pairs(both.train), 30);
  EXPECT_EQ(std::filesystem::path(both.train[2].name()).filename(), "train.bin");
}

TEST(PreparedDir, MixedOrMissingShardsAndMismatchedModelsAreRejected) {
  testing::TempDir dir;
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const ParallelDataset data = testing::random_dataset(10, 5, 1, tokenizer.vocab_size());
  write_prepared(dir.path(), tokenizer, data, {"train.bin", "train.000.bin"});
  std::string message = error_of<std::runtime_error>([&] { load_prepared(dir.path().string()); });
  EXPECT_NE(message.find("two preparations mixed"), std::string::npos) << message;

  remove_split_files(dir.path().string(), "train");
  write_prepared(dir.path(), tokenizer, data, {"train.000.bin", "train.002.bin"});
  message = error_of<std::runtime_error>([&] { load_prepared(dir.path().string()); });
  EXPECT_NE(message.find("shard 1 of the train split is missing"), std::string::npos) << message;

  remove_split_files(dir.path().string(), "train");
  EXPECT_FALSE(is_prepared_dir(dir.path().string()));
  save_dataset(data, tokenizer.vocab_size() + 1, (dir / kPreparedTrainFile).string());
  message = error_of<std::runtime_error>([&] { load_prepared(dir.path().string()); });
  EXPECT_NE(message.find("-piece vocabulary"), std::string::npos) << message;

  testing::TempDir other;
  write_file_durably((other / kPreparedModelFile).string(), testing::parallel_tokenizer().serialized() + "x");
  message = error_of<std::runtime_error>([&] {
    load_prepared(std::vector<std::string>{dir.path().string(), other.path().string()});
  });
  EXPECT_FALSE(message.empty());

  EXPECT_FALSE(is_prepared_dir((dir / "nothing").string()));
  const std::string missing = error_of<std::runtime_error>([&] { load_prepared((dir / "nothing").string()); });
  EXPECT_NE(missing.find("spm.model: missing"), std::string::npos) << missing;
}

}  // namespace
}  // namespace tfm
