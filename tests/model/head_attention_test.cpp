#include "model/head_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <ostream>

#include "model/attention.h"
#include "model/dropout.h"
#include "runtime/kernels.h"
#include "runtime/precision.h"

namespace tfm {
namespace {

struct Case {
  int64_t batch, heads, head_dim, time, keys;
  bool self, causal;
};
std::ostream& operator<<(std::ostream& out, const Case& c) {
  return out << (c.self ? "self" : "cross") << " B " << c.batch << " H " << c.heads << " Dh " << c.head_dim << " T "
             << c.time << " S " << c.keys << (c.causal ? " causal" : "");
}

/// The heads at `column` of projection x [B, L, *] as [B, H, L, Dh].
torch::Tensor heads_of(const torch::Tensor& x, int64_t column, int64_t heads, int64_t head_dim) {
  return x.narrow(2, column, heads * head_dim).view({x.size(0), x.size(1), heads, head_dim}).permute({0, 2, 1, 3});
}

/// The formula in float64, op by op: softmax over the kept keys of scale * q k^T (a query with no
/// key all 0), times the dropout noise, times v; heads side by side -> [B, T, H * Dh].
torch::Tensor reference(const torch::Tensor& queries, const torch::Tensor& memory, HeadColumns columns, int64_t heads,
                        int64_t head_dim, const torch::Tensor& mask, double scale, const torch::Tensor& noise) {
  const auto q = heads_of(queries, columns.query, heads, head_dim);
  const auto k = heads_of(memory, columns.key, heads, head_dim);
  const auto v = heads_of(memory, columns.value, heads, head_dim);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;  // [B, H, T, S]
  const auto keep = mask.expand(scores.sizes());
  scores = scores.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1).masked_fill(keep.any(-1, true).logical_not(), 0.0);
  if (noise.defined()) weights = weights * noise.to(torch::kFloat64);
  const auto context = torch::matmul(weights, v);  // [B, H, T, Dh]
  return context.permute({0, 2, 1, 3}).reshape({queries.size(0), queries.size(1), heads * head_dim});
}

/// |actual - expected| within 2% of expected's largest magnitude (bfloat16 inputs and outputs).
void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, const char* what) {
  const double largest = expected.abs().max().item<double>();
  const double error = (actual.to(torch::kFloat64) - expected).abs().max().item<double>();
  EXPECT_LE(error, 0.02 * largest + 1e-3) << what << ": largest " << largest;
}

class HeadAttentionShapes : public ::testing::TestWithParam<Case> {};

TEST_P(HeadAttentionShapes, MatchesTheFormulaForwardAndBackward) {
  const Case c = GetParam();
  const int64_t d = c.heads * c.head_dim;
  torch::manual_seed(c.keys + c.head_dim);
  // Projections as the layers write them: self-attention's [B, T, 3D] (q, k, v), or the query
  // projection [B, T, D] and the key/value projection [B, S, 2D].
  const auto queries = torch::randn({c.batch, c.time, (c.self ? 3 : 1) * d}).to(torch::kBFloat16);
  const auto memory = c.self ? queries : torch::randn({c.batch, c.keys, 2 * d}).to(torch::kBFloat16);
  const HeadColumns columns = c.self ? HeadColumns{0, d, 2 * d} : HeadColumns{0, 0, d};
  // Padding of the last keys of every other sentence, causal when asked, and sentence 0's first
  // query with no key at all.
  auto mask = torch::ones({c.batch, 1, c.time, c.keys}, torch::kBool);
  for (int64_t b = 1; b < c.batch; b += 2) mask[b].narrow(-1, c.keys - 3, 3).fill_(false);
  if (c.causal) mask = mask & torch::ones({c.time, c.keys}, torch::kBool).tril();
  mask[0][0][0].fill_(false);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const auto upstream = torch::randn({c.batch, c.time, d}).to(torch::kBFloat16);

  for (const double dropout : {0.0, 0.3}) {
    SCOPED_TRACE(dropout);
    torch::manual_seed(100);
    const auto noise = dropout > 0
                           ? dropout_noise(torch::empty({c.batch, c.heads, c.time, c.keys}, torch::kBFloat16), dropout)
                           : torch::Tensor();
    torch::manual_seed(100);
    const auto q_leaf = queries.clone().requires_grad_(true);
    const auto m_leaf = c.self ? q_leaf : memory.clone().requires_grad_(true);
    const auto context = head_attention(q_leaf, m_leaf, columns, c.heads, c.head_dim, mask, scale, dropout, true);
    ASSERT_EQ(context.sizes(), (std::vector<int64_t>{c.batch, c.time, d}));
    ASSERT_EQ(context.scalar_type(), torch::kBFloat16);
    context.backward(upstream);

    const auto q64 = queries.to(torch::kFloat64).requires_grad_(true);
    const auto m64 = c.self ? q64 : memory.to(torch::kFloat64).requires_grad_(true);
    const auto expected = reference(q64, m64, columns, c.heads, c.head_dim, mask, scale, noise);
    expected.backward(upstream.to(torch::kFloat64));

    expect_close(context, expected.detach(), "context");
    EXPECT_TRUE(torch::all(context[0][0] == 0).item<bool>()) << "a query with no key attends to nothing";
    expect_close(q_leaf.grad(), q64.grad(), "query projection's gradient");
    if (!c.self) expect_close(m_leaf.grad(), m64.grad(), "memory projection's gradient");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HeadAttentionShapes,
                         ::testing::Values(Case{3, 2, 16, 7, 7, true, false},    // fewer keys than the 16 lanes
                                           Case{2, 2, 64, 9, 9, true, true},     // the base and small head size, causal
                                           Case{3, 2, 32, 5, 19, false, false},  // keys across two blocks of lanes
                                           Case{2, 4, 64, 21, 33, false, false}, Case{2, 1, 80, 17, 17, true, true}));

TEST(HeadAttention, TakesOnlyWhatItComputes) {
  const auto x = torch::zeros({2, 5, 96}, torch::kBFloat16);
  const auto mask = torch::ones({2, 1, 1, 5}, torch::kBool);
  EXPECT_TRUE(head_attention_supported(x, x, 16, mask));
  EXPECT_TRUE(head_attention_supported(x, x, 32, torch::Tensor()));
  EXPECT_FALSE(head_attention_supported(x, x, 24, mask));                                           // not whole lanes
  EXPECT_FALSE(head_attention_supported(x.to(torch::kFloat32), x, 16, mask));                       // float32
  EXPECT_FALSE(head_attention_supported(x, x, 16, mask.to(torch::kFloat32)));                       // an additive mask
  EXPECT_FALSE(head_attention_supported(x, torch::zeros({3, 5, 96}, torch::kBFloat16), 16, mask));  // batches
  EXPECT_THROW(head_attention(x, x, {0, 32, 80}, 2, 16, mask, 0.25, 0.0, true), c10::Error);        // past the columns
}

TEST(HeadAttention, IsWhatTheLayerComputesInBfloat16Training) {
  // The layer's head_attention path against its per-head products around attention_softmax
  // (--plain-kernels off both ways; the old path taken by a head size that is not whole lanes is
  // not comparable, so the layer is compared with the formula on its own projections).
  torch::manual_seed(3);
  MultiHeadAttention layer(MultiHeadAttentionOptions(64, 4).dropout(0.0));
  layer->train();
  const auto x = torch::randn({2, 6, 64});
  const auto mask = torch::ones({2, 1, 1, 6}, torch::kBool);
  torch::Tensor context, expected;
  {
    const AutocastGuard autocast(torch::kCPU, Precision::kBFloat16);
    context = layer->forward(x, mask);
    const auto projected = layer->in_proj(x);
    expected = layer->out_proj(reference(projected.to(torch::kFloat64), projected.to(torch::kFloat64), {0, 64, 128}, 4,
                                         16, mask, 0.25, torch::Tensor())
                                   .to(torch::kBFloat16));
  }
  expect_close(context, expected.to(torch::kFloat64), "the layer's output");
}

}  // namespace
}  // namespace tfm
