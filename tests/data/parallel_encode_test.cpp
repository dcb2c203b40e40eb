#include "data/parallel_encode.h"

#include <gtest/gtest.h>

#include "tests/data_test_support.h"

namespace tfm {
namespace {

std::vector<TextPair> text_pairs(int count) {
  const auto [source, target] = testing::parallel_sentences(count);
  std::vector<TextPair> pairs;
  for (int i = 0; i < count; ++i) pairs.push_back({source[i], target[i]});
  return pairs;
}

TEST(ParallelEncode, SameIdsInTheSameOrderWithAnyNumberOfWorkers) {
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const auto pairs = text_pairs(3000);  // several blocks per worker
  for (const int threads : {1, 2, 7}) {
    std::vector<EncodedPair> out;
    encode_pairs(tokenizer, pairs, threads, out);
    ASSERT_EQ(out.size(), pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      ASSERT_EQ(out[i].source, tokenizer.encode(pairs[i].source)) << "threads " << threads << " pair " << i;
      ASSERT_EQ(out[i].target, tokenizer.encode(pairs[i].target)) << "threads " << threads << " pair " << i;
    }
  }
}

TEST(ParallelEncode, EmptyInputGivesEmptyOutput) {
  std::vector<EncodedPair> out(3);
  encode_pairs(testing::parallel_tokenizer(), {}, 0, out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace tfm
