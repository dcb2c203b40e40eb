#include "model/attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "model/attention_score.h"
#include "model/masks.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

constexpr int64_t kD = 16;
constexpr int64_t kHeads = 4;

/// LibTorch's own MultiheadAttention with our module's weights copied in, as a reference.
torch::nn::MultiheadAttention reference_for(MultiHeadAttention& ours) {
  torch::nn::MultiheadAttention reference(torch::nn::MultiheadAttentionOptions(kD, kHeads));
  torch::NoGradGuard no_grad;
  if (ours->options.self_attention()) {
    reference->in_proj_weight.copy_(ours->in_proj->weight);
    reference->in_proj_bias.copy_(ours->in_proj->bias);
  } else {
    reference->in_proj_weight.copy_(torch::cat({ours->q_proj->weight, ours->kv_proj->weight}));
    reference->in_proj_bias.copy_(torch::cat({ours->q_proj->bias, ours->kv_proj->bias}));
  }
  reference->out_proj->weight.copy_(ours->out_proj->weight);
  reference->out_proj->bias.copy_(ours->out_proj->bias);
  reference->eval();
  return reference;
}

/// Runs the reference batch-first: x [B, T, D], memory [B, S, D]; pad_keys [B, S] true = ignore;
/// blocked [T, S] additive (-inf = may not attend).
torch::Tensor run_reference(torch::nn::MultiheadAttention& reference, const torch::Tensor& x,
                            const torch::Tensor& memory, const torch::Tensor& pad_keys, const torch::Tensor& blocked) {
  const auto q = x.transpose(0, 1);
  const auto kv = memory.transpose(0, 1);
  return std::get<0>(reference->forward(q, kv, kv, pad_keys, /*need_weights=*/false, blocked)).transpose(0, 1);
}

TEST(MultiHeadAttention, SelfAttentionMatchesLibTorch) {
  torch::manual_seed(1);
  MultiHeadAttention ours(MultiHeadAttentionOptions(kD, kHeads));
  ours->eval();
  auto reference = reference_for(ours);
  const auto x = torch::randn({3, 7, kD});
  EXPECT_TENSOR_NEAR(ours->forward(x, torch::Tensor()), run_reference(reference, x, x, {}, {}), 1e-5);
}

/// Three sentences of `length` token ids: the first unpadded, the second padded (id 0) from
/// `second_end` on, the third from position 1 on.
torch::Tensor padded_ids(int64_t length, int64_t second_end) {
  auto ids = torch::randint(4, 20, {3, length}, torch::kLong);
  ids.index_put_({1, torch::indexing::Slice(second_end)}, 0);
  ids.index_put_({2, torch::indexing::Slice(1)}, 0);
  return ids;
}

TEST(MultiHeadAttention, MaskedSelfAttentionMatchesLibTorch) {
  torch::manual_seed(2);
  MultiHeadAttention ours(MultiHeadAttentionOptions(kD, kHeads));
  ours->eval();
  auto reference = reference_for(ours);
  const auto x = torch::randn({3, 6, kD});
  const auto ids = padded_ids(6, 4);
  const auto ours_mask = padding_mask(ids, 0) & causal_mask(6, torch::kCPU);  // [3, 1, 6, 6]
  const auto pad_keys = ids.eq(0);
  // LibTorch's C++ MultiheadAttention adds attn_mask to the scores, so it takes -inf, not bools.
  const auto blocked = torch::zeros({6, 6}).masked_fill(causal_mask(6, torch::kCPU).view({6, 6}).logical_not(),
                                                        -std::numeric_limits<float>::infinity());
  EXPECT_TENSOR_NEAR(ours->forward(x, ours_mask), run_reference(reference, x, x, pad_keys, blocked), 1e-5);
}

// Inference under a key-padding mask ([B, 1, 1, S], the encoder's) takes step_attention(), which
// reads no padded key; float32 and bfloat16 must still give LibTorch's attention.
TEST(MultiHeadAttention, KeyPaddingSelfAttentionAtInferenceMatchesLibTorch) {
  torch::manual_seed(3);
  MultiHeadAttention ours(MultiHeadAttentionOptions(kD, kHeads));
  ours->eval();
  auto reference = reference_for(ours);
  const auto x = torch::randn({3, 9, kD});
  const auto ids = padded_ids(9, 5);
  const auto mask = padding_mask(ids, 0);  // [3, 1, 1, 9]
  const auto expected = run_reference(reference, x, x, ids.eq(0), {});
  torch::InferenceMode inference;
  EXPECT_TENSOR_NEAR(ours->forward(x, mask), expected, 1e-5);
  ours->to(torch::kBFloat16);
  EXPECT_TENSOR_NEAR(ours->forward(x.to(torch::kBFloat16), mask).to(torch::kFloat32), expected, 5e-2);
}

TEST(MultiHeadAttention, CrossAttentionMatchesLibTorch) {
  torch::manual_seed(3);
  MultiHeadAttention ours(MultiHeadAttentionOptions(kD, kHeads).self_attention(false));
  ours->eval();
  auto reference = reference_for(ours);
  const auto x = torch::randn({2, 5, kD});
  const auto memory = torch::randn({2, 9, kD});
  auto source = torch::randint(4, 20, {2, 9}, torch::kLong);
  source.index_put_({0, torch::indexing::Slice(6)}, 0);
  EXPECT_TENSOR_NEAR(ours->forward(x, memory, padding_mask(source, 0)),
                     run_reference(reference, x, memory, source.eq(0), {}), 1e-5);
  EXPECT_TENSOR_NEAR(ours->forward(x, memory, torch::Tensor()), run_reference(reference, x, memory, {}, {}), 1e-5);
}

/// Output and the gradients of q, k, v: the fused kernel, or §3.2.1 written out (explicit scores).
std::vector<torch::Tensor> attention_with_gradients(const torch::Tensor& q, const torch::Tensor& k,
                                                    const torch::Tensor& v, const torch::Tensor& mask, bool fused) {
  std::vector<torch::Tensor> inputs = {q.clone().requires_grad_(true), k.clone().requires_grad_(true),
                                       v.clone().requires_grad_(true)};
  const auto out = fused ? fused_scaled_dot_attention(inputs[0], inputs[1], inputs[2], mask, 0.0)
                         : attend(torch::matmul(inputs[0], inputs[1].transpose(-2, -1)) / std::sqrt(q.size(-1)),
                                  inputs[2], mask, 0.0, true);
  out.pow(2).sum().backward();
  return {out.detach(), inputs[0].grad(), inputs[1].grad(), inputs[2].grad()};
}

TEST(FusedAttention, EqualsExplicitAttentionWithGradients) {
  // The kernel CUDA runs, computed here on the CPU against the formula written out.
  torch::manual_seed(4);
  const auto q = torch::randn({3, 2, 6, 8});
  const auto k = torch::randn({3, 2, 6, 8});
  const auto v = torch::randn({3, 2, 6, 8});
  auto ids = torch::randint(4, 20, {3, 6}, torch::kLong);
  ids.index_put_({1, torch::indexing::Slice(2)}, 0);
  for (const auto& mask : {torch::Tensor(), padding_mask(ids, 0), padding_mask(ids, 0) & causal_mask(6, torch::kCPU)}) {
    const auto fused = attention_with_gradients(q, k, v, mask, true);
    const auto plain = attention_with_gradients(q, k, v, mask, false);
    EXPECT_TENSOR_NEAR(fused[0], plain[0], 1e-5);
    for (size_t i = 1; i < 4; ++i) EXPECT_TENSOR_NEAR(fused[i], plain[i], 1e-4);
  }
}

TEST(FusedAttention, GivesZerosForFullyMaskedQueries) {
  torch::manual_seed(5);
  const auto q = torch::randn({2, 2, 3, 8});
  const auto k = torch::randn({2, 2, 4, 8});
  const auto v = torch::randn({2, 2, 4, 8});
  auto mask = torch::ones({2, 1, 1, 4}, torch::kBool);
  mask[1].fill_(false);  // sentence 1 may attend to nothing
  const auto fused = fused_scaled_dot_attention(q, k, v, mask, 0.0);
  EXPECT_FALSE(fused.isnan().any().item<bool>());
  EXPECT_TENSOR_NEAR(fused, attention_with_gradients(q, k, v, mask, false)[0], 1e-5);
}

TEST(Attend, FullyMaskedRowGivesZerosNotNaN) {
  const auto scores = torch::randn({1, 1, 2, 3});
  const auto v = torch::randn({1, 1, 3, 4});
  const auto mask = torch::tensor({true, false, true, false, false, false}, torch::kBool).view({1, 1, 2, 3});
  const auto out = attend(scores, v, mask, 0.0, false);
  EXPECT_FALSE(out.isnan().any().item<bool>());
  EXPECT_TENSOR_NEAR(out[0][0][1], torch::zeros({4}), 0.0);
  const auto weights = torch::softmax(scores[0][0][0].index({torch::tensor({0, 2})}), -1);
  EXPECT_TENSOR_NEAR(out[0][0][0], weights[0] * v[0][0][0] + weights[1] * v[0][0][2], 1e-6);
}

// Decoding adds a 0/-inf bias instead of selecting with a bool mask: the same bits, in float32
// and bfloat16, as long as every query keeps a key.
TEST(Attend, AnAdditiveMaskGivesTheBoolMasksBits) {
  torch::manual_seed(21);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto scores = torch::randn({3, 2, 1, 6}).to(dtype);
    const auto keep =
        torch::tensor({1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0}).to(torch::kBool).view({3, 1, 1, 6});
    const auto bias = torch::zeros({3, 1, 1, 6}, dtype).masked_fill(keep.logical_not(), -INFINITY);
    const auto expected = attention_weights(scores, keep);
    EXPECT_TRUE(torch::equal(attention_weights(scores, bias), expected));
    EXPECT_EQ(expected.masked_select(keep.logical_not().expand_as(expected)).abs().sum().item<double>(), 0.0);
  }
}

TEST(Masks, CausalWindowAndPadding) {
  EXPECT_TRUE(torch::equal(causal_mask(3, torch::kCPU).view({3, 3}),
                           torch::tensor({1, 0, 0, 1, 1, 0, 1, 1, 1}, torch::kBool).view({3, 3})));
  EXPECT_TRUE(torch::equal(window_mask(3, 4, 1, 0, torch::kCPU).view({3, 4}),
                           torch::tensor({1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1}, torch::kBool).view({3, 4})));
  // Query at absolute position 3 with window 1 sees keys 2..4.
  EXPECT_TRUE(
      torch::equal(window_mask(1, 5, 1, 3, torch::kCPU).view({5}), torch::tensor({0, 0, 1, 1, 1}, torch::kBool)));
  const auto ids = torch::tensor({5, 6, 0}, torch::kLong).view({1, 3});
  EXPECT_EQ(padding_mask(ids, 0).sizes(), (std::vector<int64_t>{1, 1, 1, 3}));
  EXPECT_TRUE(torch::equal(padding_mask(ids, 0).view({3}), torch::tensor({1, 1, 0}, torch::kBool)));
}

/// Each compatibility function, computed one query-key pair at a time with plain loops.
double loop_score(AttentionScorer& scorer, const torch::Tensor& q, const torch::Tensor& k, int64_t h) {
  const int64_t dh = q.size(0);
  auto dot = [&](const torch::Tensor& a, const torch::Tensor& b) {
    double sum = 0;
    for (int64_t i = 0; i < dh; ++i) sum += a[i].item<double>() * b[i].item<double>();
    return sum;
  };
  const auto params = scorer->named_parameters();
  switch (scorer->kind()) {
    case AttentionScore::kScaledDot: return dot(q, k) / std::sqrt(static_cast<double>(dh));
    case AttentionScore::kDot: return dot(q, k);
    case AttentionScore::kGeneral: {
      const auto w = params["bilinear"][h];  // q^T W k
      double sum = 0;
      for (int64_t i = 0; i < dh; ++i)
        for (int64_t j = 0; j < dh; ++j) sum += q[i].item<double>() * w[i][j].item<double>() * k[j].item<double>();
      return sum;
    }
    case AttentionScore::kAdditive: {
      const auto wq = params["query_proj"][h];
      const auto wk = params["key_proj"][h];
      const auto v = params["energy"][h];
      double sum = 0;
      for (int64_t a = 0; a < dh; ++a) {
        double hidden = 0;  // (q W_q)_a + (k W_k)_a
        for (int64_t i = 0; i < dh; ++i) {
          hidden += q[i].item<double>() * wq[i][a].item<double>() + k[i].item<double>() * wk[i][a].item<double>();
        }
        sum += v[a].item<double>() * std::tanh(hidden);
      }
      return sum;
    }
    case AttentionScore::kCosine:
      return params["sharpness"][h].item<double>() * dot(q, k) / std::sqrt(dot(q, q) * dot(k, k));
  }
  return 0;
}

class ScoreFunction : public ::testing::TestWithParam<AttentionScore> {};

TEST_P(ScoreFunction, EqualsLoopComputation) {
  torch::manual_seed(4);
  AttentionScorer scorer(AttentionScorerOptions(GetParam(), /*heads=*/2, /*head_dim=*/4));
  {
    torch::NoGradGuard no_grad;  // move parameters away from their initial values
    for (auto& p : scorer->parameters()) p.add_(torch::randn_like(p) * 0.3);
  }
  const auto q = torch::randn({1, 2, 3, 4});
  const auto k = torch::randn({1, 2, 5, 4});
  const auto scores = scorer->forward(q, k);
  ASSERT_EQ(scores.sizes(), (std::vector<int64_t>{1, 2, 3, 5}));
  auto expected = torch::empty({1, 2, 3, 5}, torch::kFloat64);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t s = 0; s < 5; ++s) expected[0][h][t][s] = loop_score(scorer, q[0][h][t], k[0][h][s], h);
  EXPECT_TENSOR_NEAR(scores, expected, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(AllScores, ScoreFunction,
                         ::testing::Values(AttentionScore::kScaledDot, AttentionScore::kDot, AttentionScore::kGeneral,
                                           AttentionScore::kAdditive, AttentionScore::kCosine),
                         [](const auto& test_info) { return to_string(test_info.param); });

}  // namespace
}  // namespace tfm
