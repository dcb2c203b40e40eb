#include "decode/sampling_search.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "decode/greedy_search.h"
#include "tests/decode/decode_test_support.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

constexpr int64_t kVocab = 30;

std::vector<std::vector<Hypothesis>> sample(const SamplingOptions& sampling, const torch::Tensor& source,
                                            const std::vector<int64_t>& lengths) {
  auto model = testing::random_model(kVocab, 11);
  TransformerScorer scorer(model);
  SearchOptions options;
  options.sampling = sampling;
  options.sampling.enabled = true;
  options.max_len_a = 0;
  options.max_len_b = 12;
  return SamplingSearch(options).search(scorer, source, lengths);
}

TEST(SamplingSearch, TopOneIsGreedy) {
  // Drawing among the single most probable token (top-k 1, or a nucleus narrower than it) is
  // greedy decoding: the same tokens and the same scores.
  std::vector<int64_t> lengths;
  const auto source = testing::batch_of({{5, 6, 7}, {8, 9}, {10, 11, 12, 13}}, lengths);
  auto model = testing::random_model(kVocab, 11);
  TransformerScorer scorer(model);
  SearchOptions options;
  options.max_len_a = 0;
  options.max_len_b = 12;
  const auto greedy = greedy_search(scorer, source, lengths, options);
  SamplingOptions top_one;
  top_one.top_k = 1;
  SamplingOptions narrow_nucleus;
  narrow_nucleus.top_p = 1e-6;
  narrow_nucleus.temperature = 3.0;  // the temperature changes no order
  for (const auto& sampling : {top_one, narrow_nucleus}) {
    const auto sampled = sample(sampling, source, lengths);
    ASSERT_EQ(sampled.size(), greedy.size());
    for (size_t b = 0; b < greedy.size(); ++b) {
      EXPECT_EQ(sampled[b][0].tokens, greedy[b][0].tokens) << "sentence " << b;
      EXPECT_NEAR(sampled[b][0].score, greedy[b][0].score, 1e-5) << "sentence " << b;
    }
  }
}

TEST(SamplingSearch, TheSameSeedDrawsTheSameAndAnotherSeedOthers) {
  std::vector<int64_t> lengths;
  const auto source = testing::batch_of({{5, 6, 7}, {8, 9}, {10, 11, 12, 13}, {14}}, lengths);
  SamplingOptions sampling;
  sampling.temperature = 2.0;  // flat enough that draws differ
  sampling.seed = 7;
  const auto first = sample(sampling, source, lengths);
  const auto again = sample(sampling, source, lengths);
  sampling.seed = 8;
  const auto other = sample(sampling, source, lengths);
  bool any_different = false;
  for (size_t b = 0; b < first.size(); ++b) {
    EXPECT_EQ(first[b][0].tokens, again[b][0].tokens) << "sentence " << b;
    EXPECT_EQ(first[b][0].score, again[b][0].score) << "sentence " << b;
    any_different = any_different || first[b][0].tokens != other[b][0].tokens;
  }
  EXPECT_TRUE(any_different) << "seeds 7 and 8 drew the same four translations";
}

TEST(SamplingSearch, LogitsKeepTheTopKAndTheNucleus) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // Probabilities 0.5, 0.25, 0.15, 0.1.
  const auto log_probs = torch::tensor({0.5, 0.25, 0.15, 0.1}).log().view({1, 4});
  SamplingOptions top_two;
  top_two.top_k = 2;
  const auto k = sampling_logits(log_probs, top_two);
  EXPECT_TRUE(std::isfinite(k[0][1].item<float>()));
  EXPECT_EQ(k[0][2].item<float>(), kNegInf);
  EXPECT_EQ(k[0][3].item<float>(), kNegInf);
  SamplingOptions nucleus;
  nucleus.top_p = 0.7;  // 0.5 + 0.25 reaches it: the third token (0.75 before it) is out
  const auto p = sampling_logits(log_probs, nucleus);
  EXPECT_NEAR(p[0][0].item<float>(), std::log(0.5), 1e-6);
  EXPECT_TRUE(std::isfinite(p[0][1].item<float>()));
  EXPECT_EQ(p[0][2].item<float>(), kNegInf);
  EXPECT_EQ(p[0][3].item<float>(), kNegInf);
  for (const double tiny : {1e-6, 1e-300, std::numeric_limits<double>::denorm_min()}) {
    nucleus.top_p = tiny;  // below float32's smallest number too: still the most probable token
    const auto top = sampling_logits(log_probs, nucleus);
    EXPECT_NEAR(top[0][0].item<float>(), std::log(0.5), 1e-6) << "top_p " << tiny;
    EXPECT_EQ(top[0][1].item<float>(), kNegInf) << "top_p " << tiny;
  }
  SamplingOptions warm;
  warm.temperature = 2.0;  // flatter: every token stays, each log-probability halved
  const auto t = sampling_logits(log_probs, warm);
  EXPECT_TENSOR_NEAR(t, log_probs / 2, 1e-6);
}

TEST(SamplingSearch, OptionsAreValidated) {
  SearchOptions options;
  options.sampling.enabled = true;
  options.sampling.temperature = 0;
  EXPECT_THROW(make_search_strategy(options), std::invalid_argument);
  options.sampling.temperature = 1;
  options.sampling.top_p = 1.5;
  EXPECT_THROW(make_search_strategy(options), std::invalid_argument);
  options.sampling.top_p = 1;
  options.nbest = 2;
  EXPECT_THROW(make_search_strategy(options), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
