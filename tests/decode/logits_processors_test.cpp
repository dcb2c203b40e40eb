#include "decode/logits_processors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "text/special_ids.h"

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// Two rows over 8 tokens, all log-probability -1.
torch::Tensor uniform() { return torch::full({2, 8}, -1.0f); }

TEST(LogitsProcessors, PadAndBosNeverAndUnkPenalised) {
  SearchOptions options;
  options.unk_penalty = 0.5;
  std::vector<int64_t> none;
  RowFacts rows{0, {0, 0}, {&none, &none}, nullptr, {}};
  auto log_probs = uniform();
  LogitsProcessors(options).apply(log_probs, rows);
  EXPECT_EQ(log_probs[0][kPadId].item<float>(), kNegInf);
  EXPECT_EQ(log_probs[1][kBosId].item<float>(), kNegInf);
  EXPECT_FLOAT_EQ(log_probs[0][kUnkId].item<float>(), -1.5f);
  EXPECT_FLOAT_EQ(log_probs[0][kEosId].item<float>(), -1.0f);
}

TEST(LogitsProcessors, MinLengthHoldsEosBackUnlessTheMaximumEndsTheRow) {
  SearchOptions options;
  options.min_len = 2;
  std::vector<int64_t> none;
  auto log_probs = uniform();
  LogitsProcessors(options).apply(log_probs, RowFacts{1, {0, 1}, {&none, &none}, nullptr, {}});
  EXPECT_EQ(log_probs[0][kEosId].item<float>(), kNegInf);      // 1 token so far, 2 needed
  EXPECT_FLOAT_EQ(log_probs[1][kEosId].item<float>(), -1.0f);  // at its maximum: eos only
  EXPECT_EQ(log_probs[1][5].item<float>(), kNegInf);
  auto later = uniform();
  LogitsProcessors(options).apply(later, RowFacts{2, {0, 0}, {&none, &none}, nullptr, {}});
  EXPECT_FLOAT_EQ(later[0][kEosId].item<float>(), -1.0f);
}

TEST(LogitsProcessors, MinLengthCountsEachRowsOwnTokens) {
  // Rows that joined a running batch at different steps (continuous batching).
  SearchOptions options;
  options.min_len = 2;
  std::vector<int64_t> none;
  auto log_probs = torch::full({3, 8}, -1.0f);
  LogitsProcessors(options).apply(log_probs, RowFacts{0, {0, 0, 1}, {&none, &none, &none}, nullptr, {0, 5, 1}});
  EXPECT_EQ(log_probs[0][kEosId].item<float>(), kNegInf);      // 0 tokens so far
  EXPECT_FLOAT_EQ(log_probs[1][kEosId].item<float>(), -1.0f);  // 5 tokens: may end
  EXPECT_FLOAT_EQ(log_probs[2][kEosId].item<float>(), -1.0f);  // 1 token, but at its maximum
  EXPECT_EQ(log_probs[2][5].item<float>(), kNegInf);
}

TEST(LogitsProcessors, NoRepeatNgramBansTheTokenThatWouldRepeat) {
  SearchOptions options;
  options.no_repeat_ngram = 2;
  const std::vector<int64_t> history{5, 6, 5};  // "5 6" seen: after 5, 6 is banned
  const std::vector<int64_t> none;
  auto log_probs = uniform();
  LogitsProcessors(options).apply(log_probs, RowFacts{3, {0, 0}, {&history, &none}, nullptr, {}});
  EXPECT_EQ(log_probs[0][6].item<float>(), kNegInf);
  EXPECT_FLOAT_EQ(log_probs[0][7].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(log_probs[1][6].item<float>(), -1.0f);
}

}  // namespace
}  // namespace tfm
