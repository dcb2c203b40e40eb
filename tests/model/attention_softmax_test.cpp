#include "model/attention_softmax.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <ostream>

#include "model/attention.h"
#include "model/dropout.h"
#include "runtime/kernels.h"

namespace tfm {
namespace {

/// The formula in float64, op by op: softmax over the kept keys of scale * scores (a row with no
/// key all 0), times the dropout noise when there is one. scores [B, H, T, S], mask bool or undefined.
torch::Tensor reference_weights(const torch::Tensor& scores, const torch::Tensor& mask, double scale,
                                const torch::Tensor& noise) {
  auto x = scores.to(torch::kFloat64) * scale;
  torch::Tensor keep = mask.defined() ? mask.expand(x.sizes()) : torch::ones(x.sizes(), torch::kBool);
  x = x.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(x, -1).masked_fill(keep.any(-1, true).logical_not(), 0.0);
  if (noise.defined()) weights = weights * noise.to(torch::kFloat64);
  return weights;
}

struct Case {
  int64_t batch, heads, time, width;
  bool causal;
};
std::ostream& operator<<(std::ostream& out, const Case& c) {
  return out << "[" << c.batch << ", " << c.heads << ", " << c.time << ", " << c.width << "]"
             << (c.causal ? " causal" : "");
}

/// Scores [B, H, T, S] in bfloat16 and a mask: padding of the last keys of every other sentence,
/// causal when asked, and sentence 0's first query with no key at all.
std::pair<torch::Tensor, torch::Tensor> scores_and_mask(const Case& c) {
  const auto scores = (torch::randn({c.batch, c.heads, c.time, c.width}) * 3).to(torch::kBFloat16);
  auto mask = torch::ones({c.batch, 1, c.time, c.width}, torch::kBool);
  for (int64_t b = 1; b < c.batch; b += 2) mask[b].narrow(-1, c.width - 3, 3).fill_(false);
  if (c.causal) mask = mask & torch::ones({c.time, c.width}, torch::kBool).tril();
  mask[0][0][0].fill_(false);
  return {scores, mask};
}

class AttentionSoftmaxShapes : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionSoftmaxShapes, MatchesTheFormulaForwardAndBackward) {
  // Widths below, at and across the 16 vector lanes, so that the tails are covered.
  const Case c = GetParam();
  torch::manual_seed(c.width);
  const auto [scores, mask] = scores_and_mask(c);
  const double scale = 0.125;
  for (const double dropout : {0.0, 0.3}) {
    torch::manual_seed(100);
    const auto noise = dropout > 0 ? dropout_noise(scores, dropout) : torch::Tensor();
    torch::manual_seed(100);
    const auto leaf = scores.clone().requires_grad_(true);
    const auto weights = attention_softmax(leaf, mask, scale, dropout, true);
    const auto expected = reference_weights(scores, mask, scale, noise);
    EXPECT_TRUE(torch::allclose(weights.to(torch::kFloat64), expected, 1e-2, 1e-3)) << "dropout " << dropout;
    // Dropped and masked weights are exactly 0, as are the keyless row's.
    EXPECT_TRUE(torch::equal(weights.eq(0), expected.eq(0))) << "dropout " << dropout;

    const auto upstream = torch::randn(scores.sizes()).to(torch::kBFloat16);
    weights.backward(upstream);
    const auto reference_leaf = scores.to(torch::kFloat64).requires_grad_(true);
    reference_weights(reference_leaf, mask, scale, noise).backward(upstream.to(torch::kFloat64));
    const auto expected_grad = reference_leaf.grad();
    const double largest = expected_grad.abs().max().item<double>();
    EXPECT_LT((leaf.grad().to(torch::kFloat64) - expected_grad).abs().max().item<double>(), 0.02 * largest)
        << "dropout " << dropout;
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, AttentionSoftmaxShapes,
                         ::testing::Values(Case{3, 2, 5, 7, false}, Case{2, 2, 16, 16, true}, Case{4, 3, 9, 37, false},
                                           Case{2, 4, 40, 40, true}));

TEST(AttentionSoftmax, WithoutAMaskEveryKeyCounts) {
  torch::manual_seed(4);
  const auto scores = torch::randn({2, 2, 3, 21}).to(torch::kBFloat16);
  const auto weights = attention_softmax(scores, torch::Tensor(), 0.5, 0.0, true);
  EXPECT_TRUE(
      torch::allclose(weights.to(torch::kFloat64), reference_weights(scores, torch::Tensor(), 0.5, {}), 1e-2, 1e-3));
}

TEST(AttentionSoftmax, TrainingAttentionDrawsTheSameDropoutAsTheOpByOpPath) {
  // The fused path and attend() over the scaled scores zero the same weights for one seed.
  torch::manual_seed(8);
  const auto [scores, mask] = scores_and_mask(Case{2, 2, 6, 11, true});
  torch::manual_seed(55);
  const auto fused = attention_softmax(scores, mask, 1.0, 0.4, true);
  torch::manual_seed(55);
  const auto plain = apply_dropout(attention_weights(scores, mask), 0.4, true);
  EXPECT_TRUE(torch::equal(fused.eq(0), plain.eq(0)));
  EXPECT_TRUE(torch::allclose(fused.to(torch::kFloat32), plain.to(torch::kFloat32), 2e-2, 1e-3));
}

TEST(AttentionSoftmax, TakesOnlyCpuBfloat16ScoresAndBoolMasks) {
  const auto scores = torch::zeros({1, 1, 2, 2}, torch::kBFloat16);
  EXPECT_TRUE(attention_softmax_supported(scores, torch::Tensor()));
  EXPECT_TRUE(attention_softmax_supported(scores, torch::ones({1, 1, 1, 2}, torch::kBool)));
  EXPECT_FALSE(attention_softmax_supported(scores.to(torch::kFloat32), torch::Tensor()));
  EXPECT_FALSE(attention_softmax_supported(scores, torch::zeros({1, 1, 1, 2})));  // an additive mask
  EXPECT_THROW(attention_softmax(scores.to(torch::kFloat32), torch::Tensor(), 1.0, 0.0, true), c10::Error);
}

TEST(AttentionSoftmax, BfloatTrainingAttentionMatchesTheFloatModule) {
  // Multi-head attention in training with bf16 inputs takes the fused path; without dropout its
  // output and input gradient follow the float32 module's.
  torch::manual_seed(12);
  MultiHeadAttention attention(MultiHeadAttentionOptions(32, 4));
  attention->train();
  const auto x = torch::randn({3, 7, 32});
  auto mask = torch::ones({3, 1, 1, 7}, torch::kBool);
  mask[1].narrow(-1, 4, 3).fill_(false);
  const auto float_x = x.clone().requires_grad_(true);
  const auto expected = attention->forward(float_x, mask);
  expected.sum().backward();
  attention->to(torch::kBFloat16);
  const auto half_x = x.to(torch::kBFloat16).requires_grad_(true);
  const auto got = attention->forward(half_x, mask);
  got.to(torch::kFloat32).sum().backward();
  EXPECT_TRUE(torch::allclose(got.to(torch::kFloat32), expected, 5e-2, 5e-2));
  EXPECT_TRUE(torch::allclose(half_x.grad().to(torch::kFloat32), float_x.grad(), 5e-2, 5e-2));
}

}  // namespace
}  // namespace tfm
