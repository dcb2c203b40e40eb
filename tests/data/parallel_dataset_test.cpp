#include "data/parallel_dataset.h"

#include <gtest/gtest.h>

namespace tfm {
namespace {

TEST(ParallelDataset, AppendKeepsSentencesApartInFlatArrays) {
  ParallelDataset data;
  EXPECT_EQ(data.size(), 0);
  data.append({7, 8, 9}, {10});
  data.append({11}, {});
  data.append({}, {12, 13});
  ASSERT_EQ(data.size(), 3);
  EXPECT_EQ(data.source.tokens, (std::vector<int32_t>{7, 8, 9, 11}));
  EXPECT_EQ(data.source.offsets, (std::vector<int64_t>{0, 3, 4, 4}));
  EXPECT_EQ(data.target.offsets, (std::vector<int64_t>{0, 1, 1, 3}));
  EXPECT_EQ(data.source.length(0), 3);
  EXPECT_EQ(data.source.length(2), 0);
  EXPECT_EQ(data.source.ids(0), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(data.target.ids(2), (std::vector<int64_t>{12, 13}));
  EXPECT_EQ(data.target.data(2)[1], 13);
  EXPECT_EQ(data.target.total_tokens(), 3);
}

}  // namespace
}  // namespace tfm
