// TransformerScorer's two forms of a step: log-probabilities written out, and logits with offsets.
#include "decode/scorer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "tests/decode/decode_test_support.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

using testing::random_model;
using testing::source_for;

/// The scores of the first three steps of `dtype`, both ways, on the same tokens.
void expect_step_scores_equal_log_probs(torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  auto model = random_model(29, 5);
  model->to(dtype);
  TransformerScorer scorer(model);
  const auto source = torch::cat({source_for({5, 6, 7, 8}), source_for({9, 10, 11, 12})});
  auto written = scorer.start(source);
  auto fused = scorer.start(source);
  auto last = torch::full({2}, kBosId, torch::kLong);
  for (int step = 0; step < 3; ++step) {
    const auto log_probs = scorer.step(last, *written);  // [2, V] float32
    const auto [values, row_offsets, block_maxima] = scorer.step_scores(last, *fused);
    ASSERT_TRUE(row_offsets.defined());  // on the CPU, always: the logits are never normalized in place
    ASSERT_EQ(values.scalar_type(), dtype);
    const auto combined = values.to(torch::kFloat32) + row_offsets.unsqueeze(1);
    ASSERT_TENSOR_NEAR(combined, log_probs, 1e-5) << "step " << step;
    // One block here (V < kLogitBlock): each row's largest value.
    ASSERT_EQ(block_maxima.sizes(), torch::IntArrayRef({2, 1}));
    EXPECT_TRUE(torch::equal(block_maxima.squeeze(1), std::get<0>(values.to(torch::kFloat32).max(1))));
    last = torch::tensor({5 + step, 20 - step}, torch::kLong);
  }
}

TEST(TransformerScorer, BFloat16StepScoresAreLogitsWithTheirNormalizers) {
  expect_step_scores_equal_log_probs(torch::kBFloat16);
}

TEST(TransformerScorer, Float32StepScoresAreLogitsWithTheirNormalizers) {
  expect_step_scores_equal_log_probs(torch::kFloat32);
}

// step_blocks() runs the step once; each block's scores are those rows of step_scores().
TEST(TransformerScorer, StepBlocksAreTheRowsOfStepScores) {
  torch::NoGradGuard no_grad;
  auto model = random_model(29, 5);
  TransformerScorer scorer(model);
  const auto source = torch::cat({source_for({5, 6, 7, 8}), source_for({9, 10, 11, 12}), source_for({13, 14, 15, 16})});
  auto whole = scorer.start(source);
  auto blocked = scorer.start(source);
  EXPECT_GT(scorer.block_rows(*blocked), 0);
  auto last = torch::full({3}, kBosId, torch::kLong);
  for (int step = 0; step < 3; ++step) {
    const auto want = scorer.step_scores(last, *whole);
    const auto blocks = scorer.step_blocks(last, *blocked);
    for (const auto& [first, count] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}}) {
      const auto got = blocks->rows(first, count);
      ASSERT_EQ(got.values.size(0), count);
      EXPECT_TENSOR_NEAR(got.values, want.values.narrow(0, first, count), 1e-5) << "step " << step;
      EXPECT_TENSOR_NEAR(got.row_offsets, want.row_offsets.narrow(0, first, count), 1e-5) << "step " << step;
    }
    last = torch::tensor({5 + step, 20 - step, 7}, torch::kLong);
  }
}

}  // namespace
}  // namespace tfm
