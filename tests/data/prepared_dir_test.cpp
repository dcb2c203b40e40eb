#include "data/prepared_dir.h"

#include <gtest/gtest.h>

#include "data/dataset_file.h"
#include "tests/data_test_support.h"

namespace tfm {
namespace {

using testing::error_of;

TEST(PreparedDir, StaleValidationSplitIsRemovedAndMismatchedModelRejected) {
  testing::TempDir dir;
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const ParallelDataset data = testing::random_dataset(10, 5, 1, tokenizer.vocab_size());
  save_prepared(dir.path().string(), tokenizer, data, &data);
  EXPECT_TRUE(std::filesystem::exists(dir / kPreparedValidFile));
  save_prepared(dir.path().string(), tokenizer, data, nullptr);  // a stale valid.bin must go
  EXPECT_FALSE(std::filesystem::exists(dir / kPreparedValidFile));
  EXPECT_FALSE(load_prepared(dir.path().string()).valid.has_value());

  save_dataset(data, tokenizer.vocab_size() + 1, (dir / kPreparedTrainFile).string());
  const std::string message = error_of<std::runtime_error>([&] { load_prepared(dir.path().string()); });
  EXPECT_NE(message.find("-piece vocabulary"), std::string::npos) << message;
  EXPECT_FALSE(is_prepared_dir((dir / "nothing").string()));
  const std::string missing = error_of<std::runtime_error>([&] { load_prepared((dir / "nothing").string()); });
  EXPECT_NE(missing.find("spm.model: missing"), std::string::npos) << missing;
}

}  // namespace
}  // namespace tfm
