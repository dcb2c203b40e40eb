// A sentence's translation does not depend on the sentences batched with it, in any precision.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "decode/id_translator.h"
#include "tests/decode/decode_test_support.h"

namespace tfm {
namespace {

using testing::random_model;

/// Sources of 1-12 subwords from a 40-token vocabulary: batches of them pad to many lengths.
std::vector<std::vector<int64_t>> varied_sources() {
  torch::manual_seed(5);
  std::vector<std::vector<int64_t>> sources;
  for (int i = 0; i < 30; ++i) {
    const int64_t length = torch::randint(1, 13, {1}).item<int64_t>();
    const auto ids = torch::randint(4, 40, {length}, torch::kLong);
    sources.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + length);
  }
  return sources;
}

struct Mode {
  std::string name;
  Precision precision;
  bool int8;
  double score_tolerance;  // 0: the same bits
};

// One batch of all, and one sentence a batch: the same hypotheses. The encoder's attention reads
// no padding and int8 quantizes each row by its own range, so neither the padded length nor the
// batch mates' values reach a sentence: in int8, whose products are exact integers, its scores are
// the same bits. Float products pick their kernels by row count (model/small_rows_product.h), and
// their sums' order with them: scores agree to rounding.
TEST(IdTranslatorBatchInvariance, ASentenceTranslatesAloneAsInAnyBatch) {
  const auto sources = varied_sources();
  for (const Mode& mode :
       {Mode{"int8", Precision::kFloat32, true, 0.0}, Mode{"float32", Precision::kFloat32, false, 1e-4},
        Mode{"bfloat16", Precision::kBFloat16, false, 5e-2}}) {
    TranslatorOptions options;
    options.search.beam = 3;
    options.search.nbest = 2;
    options.precision = mode.precision;
    options.quantize_int8 = mode.int8;
    IdTranslator together({random_model(40, 17)}, options, torch::kCPU);
    const auto batched = together.translate(sources);
    options.batch_size = 1;
    IdTranslator alone({random_model(40, 17)}, options, torch::kCPU);
    const auto single = alone.translate(sources);
    ASSERT_EQ(batched.size(), single.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      ASSERT_EQ(batched[i].nbest.size(), single[i].nbest.size()) << mode.name << ", sentence " << i;
      for (size_t n = 0; n < single[i].nbest.size(); ++n) {
        EXPECT_EQ(batched[i].nbest[n].tokens, single[i].nbest[n].tokens) << mode.name << ", sentence " << i;
        if (mode.score_tolerance == 0.0) {
          EXPECT_EQ(batched[i].nbest[n].score, single[i].nbest[n].score) << mode.name << ", sentence " << i;
        } else {
          EXPECT_NEAR(batched[i].nbest[n].score, single[i].nbest[n].score, mode.score_tolerance)
              << mode.name << ", sentence " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tfm
