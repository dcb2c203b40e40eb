#include "model/step_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The paper's formula written out in float64, as an independent reference:
/// q [B, H, Tq, Dh], k, v [B, H, S, Dh], bias [B, 1, 1, S] or undefined -> [B, Tq, H*Dh].
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& bias, int64_t first) {
  const auto q64 = q.to(torch::kFloat64), k64 = k.to(torch::kFloat64), v64 = v.to(torch::kFloat64);
  auto scores = torch::matmul(q64, k64.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  if (bias.defined()) scores = scores + bias.to(torch::kFloat64);
  if (first > 0) scores.narrow(-1, 0, first).fill_(-kInf);
  auto weights = torch::softmax(scores, -1).nan_to_num(0.0);  // a query with no key attends to nothing
  const auto context = torch::matmul(weights, v64);           // [B, H, Tq, Dh]
  return context.transpose(1, 2).reshape({q.size(0), q.size(2), -1});
}

TEST(StepAttention, MatchesTheFormulaOnATimeMajorCacheView) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  const int64_t rows = 5, heads = 4, head_dim = 40, length = 9;  // Dh not a multiple of the 16 lanes
  const auto q = torch::randn({rows, 1, 3 * heads * head_dim})
                     .view({rows, 1, 3, heads, head_dim})
                     .permute({2, 0, 3, 1, 4})[0];  // [N, H, 1, Dh], strided like project_qkv's
  const auto cache = torch::randn({length, rows, heads, head_dim});
  const auto keys = cache.permute({1, 2, 0, 3});  // [N, H, S, Dh] view
  const auto values = torch::randn({length, rows, heads, head_dim}).permute({1, 2, 0, 3});
  EXPECT_TENSOR_NEAR(step_attention(q, keys, values, {}), reference(q, keys, values, {}, 0).to(torch::kFloat32), 1e-5);
  EXPECT_TENSOR_NEAR(step_attention(q, keys, values, {}, 4), reference(q, keys, values, {}, 4).to(torch::kFloat32),
                     1e-5);
}

TEST(StepAttention, RowsThatBeganLateSkipTheirEarlierKeys) {
  // Rows that joined a running batch: row b reads keys from max(first, row_first[b]) on. The keys
  // before are never read, so even a NaN there (a stale cache row) cannot leak in.
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  const int64_t rows = 40, heads = 2, head_dim = 24, length = 10;  // 80 items: blocks of mixed starts
  const auto q = torch::randn({rows, heads, 1, head_dim});
  auto keys = torch::randn({length, rows, heads, head_dim});
  const auto values = torch::randn({length, rows, heads, head_dim});
  std::vector<int64_t> row_first(rows);
  auto bias = torch::zeros({rows, 1, 1, length});
  for (int64_t b = 0; b < rows; ++b) {
    row_first[b] = (b * 7) % length;  // 0 .. 9
    const int64_t from = std::max<int64_t>(row_first[b], 2);
    bias.index_put_({b, 0, 0, torch::indexing::Slice(0, from)}, -kInf);
    if (row_first[b] > 0) keys.select(1, b).narrow(0, 0, row_first[b]).fill_(std::nan(""));
  }
  const auto keys_view = keys.permute({1, 2, 0, 3}), values_view = values.permute({1, 2, 0, 3});
  const auto out = step_attention(q, keys_view, values_view, {}, 2, &row_first);
  keys.nan_to_num_(0.0);
  EXPECT_TENSOR_NEAR(out, reference(q, keys_view, values_view, bias, 0).to(torch::kFloat32), 1e-5);
  const std::vector<int64_t> too_few(rows - 1, 0);
  EXPECT_THROW(step_attention(q, keys_view, values_view, {}, 0, &too_few), c10::Error);
}

TEST(StepAttention, GroupedQueriesWithAPaddingBias) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  const int64_t sources = 3, beam = 4, heads = 2, head_dim = 32, length = 7;
  const auto q = torch::randn({sources, beam, heads, head_dim}).transpose(1, 2);  // [M, H, K, Dh]
  const auto keys = torch::randn({sources, heads, length, head_dim});
  const auto values = torch::randn({sources, heads, length, head_dim});
  auto bias = torch::zeros({sources, 1, 1, length});
  bias.index_put_({1, 0, 0, torch::indexing::Slice(5)}, -kInf);  // source 1 has 2 padded positions
  bias.index_put_({2, 0, 0, torch::indexing::Slice()}, -kInf);   // source 2 has no key at all: zeros
  const auto out = step_attention(q, keys, values, bias);
  EXPECT_TENSOR_NEAR(out, reference(q, keys, values, bias, 0).to(torch::kFloat32), 1e-5);
  EXPECT_TRUE(out[2].eq(0).all().item<bool>());
}

TEST(StepAttention, KeysUnderAPaddingBiasTailAreNotRead) {
  // Keys and values past a row's last unmasked position are skipped, not scored: with NaN there,
  // scoring them would make the row NaN. Float32 and bfloat16, and a row masked in the middle only.
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  const int64_t sources = 3, beam = 4, heads = 2, head_dim = 32, length = 9;
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto q = torch::randn({sources, beam, heads, head_dim}).transpose(1, 2).to(dtype);  // [M, H, K, Dh]
    auto keys = torch::randn({sources, heads, length, head_dim}).to(dtype);
    auto values = torch::randn({sources, heads, length, head_dim}).to(dtype);
    auto bias = torch::zeros({sources, 1, 1, length}, dtype);
    bias.index_put_({0, 0, 0, torch::indexing::Slice(4)}, -kInf);  // 5 padded positions
    bias.index_put_({2, 0, 0, 3}, -kInf);                          // masked, but not a tail
    const auto expected = reference(q, keys, values, bias, 0).to(torch::kFloat32);
    keys[0].narrow(1, 4, length - 4).fill_(std::nan(""));
    values[0].narrow(1, 4, length - 4).fill_(std::nan(""));
    EXPECT_TENSOR_NEAR(step_attention(q, keys, values, bias).to(torch::kFloat32), expected,
                       dtype == torch::kFloat32 ? 1e-5 : 3e-2)
        << dtype;
  }
}

TEST(StepAttention, BFloat16ComputesInFloat) {
  // Head sizes that are whole pairs of 16 lanes (where AVX512-BF16 has it, its dot product
  // instruction computes their scores) and one that is not; 40 rows x 4 heads: several blocks.
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  for (const int64_t head_dim : {32, 48, 64, 96}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim));
    const auto q = torch::randn({40, 4, 1, head_dim}).to(torch::kBFloat16);
    const auto keys = torch::randn({40, 4, 11, head_dim}).to(torch::kBFloat16);
    const auto values = torch::randn({40, 4, 11, head_dim}).to(torch::kBFloat16);
    auto bias = torch::zeros({40, 1, 1, 11}).to(torch::kBFloat16);
    bias.narrow(0, 0, 20).narrow(3, 9, 2).fill_(-kInf);  // padding in half the rows
    const auto out = step_attention(q, keys, values, bias, 1);
    ASSERT_EQ(out.scalar_type(), torch::kBFloat16);
    // Only the output's rounding to bfloat16 (8 bits of mantissa) separates it from the float64
    // formula: the products and sums are float.
    const auto expected = reference(q, keys, values, bias, 1);
    EXPECT_LE((out.to(torch::kFloat64) - expected).abs().max().item<double>(),
              expected.abs().max().item<double>() * std::pow(2.0, -8));
  }
}

TEST(StepAttention, AFloatQueryReadsABFloat16Cache) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  const auto q = torch::randn({6, 4, 2, 32});
  const auto keys = torch::randn({6, 4, 11, 32}).to(torch::kBFloat16);
  const auto values = torch::randn({6, 4, 11, 32}).to(torch::kBFloat16);
  auto bias = torch::zeros({6, 1, 1, 11});
  bias.narrow(3, 8, 3).fill_(-kInf);
  const auto out = step_attention(q, keys, values, bias, 2);
  ASSERT_EQ(out.scalar_type(), torch::kFloat32);
  // The reference reads the same bfloat16 keys and values: only float32 arithmetic separates them.
  EXPECT_TENSOR_NEAR(out, reference(q, keys, values, bias, 2).to(torch::kFloat32), 1e-5);
  // A bfloat16 query over float32 keys is not a layout any cache has.
  EXPECT_THROW(step_attention(q.to(torch::kBFloat16), keys.to(torch::kFloat32), values.to(torch::kFloat32), {}),
               c10::Error);
}

TEST(StepAttention, ReadsEachPositionFromTheRowItsAncestorTableNames) {
  // A cache that beam search reordered without moving it: row b's key and value at position s lie
  // in cache row slots.slot(b, s), and the cache has more rows than the query.
  torch::NoGradGuard no_grad;
  torch::manual_seed(8);
  const int64_t width = 7, rows = 5, heads = 3, head_dim = 72, length = 20;  // Dh: 4 + 0 + 8 lanes
  const auto q = torch::randn({rows, heads, 1, head_dim});
  const auto keys = torch::randn({length, width, heads, head_dim}).permute({1, 2, 0, 3});  // [W, H, S, Dh]
  const auto values = torch::randn({length, width, heads, head_dim}).permute({1, 2, 0, 3});
  CacheSlots slots;
  std::vector<int64_t> index(width);
  for (int64_t filled = 1; filled < length; ++filled) {  // a reorder at every step, as beam search does
    for (int64_t i = 0; i < width; ++i) index[i] = (i * 3 + filled) % width;
    slots.reorder(index.data(), width, filled);
    slots.write(width, filled);
  }
  std::vector<int64_t> last = {6, 0, 6, 2, 3};  // a last reorder that drops two rows and repeats one
  slots.reorder(last.data(), rows, length);
  // The same keys gathered row by row, as a plain [B, H, S, Dh] tensor.
  auto gathered_keys = torch::empty({rows, heads, length, head_dim});
  auto gathered_values = torch::empty_like(gathered_keys);
  for (int64_t b = 0; b < rows; ++b) {
    for (int64_t s = 0; s < length; ++s) {
      gathered_keys.select(0, b).select(1, s).copy_(keys.select(0, slots.slot(b, s)).select(1, s));
      gathered_values.select(0, b).select(1, s).copy_(values.select(0, slots.slot(b, s)).select(1, s));
    }
  }
  EXPECT_TENSOR_NEAR(gather_slots(keys, slots), gathered_keys, 0.0);
  EXPECT_TENSOR_NEAR(step_attention(q, keys, values, {}, 3, nullptr, &slots),
                     reference(q, gathered_keys, gathered_values, {}, 3).to(torch::kFloat32), 1e-5);
  const auto bf16 = [](const torch::Tensor& x) { return x.to(torch::kBFloat16); };
  EXPECT_TENSOR_NEAR(step_attention(q, bf16(keys), bf16(values), {}, 0, nullptr, &slots),
                     reference(q, bf16(gathered_keys), bf16(gathered_values), {}, 0).to(torch::kFloat32), 1e-5);
  // The table must describe the query's rows.
  EXPECT_THROW(step_attention(q.narrow(0, 0, 4), keys, values, {}, 0, nullptr, &slots), c10::Error);
}

TEST(StepAttention, CallsLargeEnoughToAskForBlocksAheadMatchTheFormula) {
  // Past 2 MiB of keys and values a thread asks for later blocks' keys and values while it
  // computes, and a sentence's beams share one pass over its values: a decoder step's shapes,
  // with the ancestor table, late rows and padding tails (NaN where nothing may be read).
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  const int64_t heads = 8, head_dim = 64;
  {  // self-attention: [W, H, S, Dh] views of a time-major cache, reordered by a table
    const int64_t width = 96, rows = 80, length = 24;
    const auto q = torch::randn({rows, heads, 1, head_dim});
    const auto keys = torch::randn({length, width, heads, head_dim}).permute({1, 2, 0, 3});
    const auto values = torch::randn({length, width, heads, head_dim}).permute({1, 2, 0, 3});
    CacheSlots slots;
    std::vector<int64_t> index(width);
    for (int64_t filled = 1; filled < length; ++filled) {
      for (int64_t i = 0; i < width; ++i) index[i] = (i / 4) * 4 + (i + filled) % 4;  // within each beam of 4
      slots.reorder(index.data(), width, filled);
      slots.write(width, filled);
    }
    std::vector<int64_t> kept(rows);
    for (int64_t i = 0; i < rows; ++i) kept[i] = i + 16 * (i / 64);  // rows 64..79 <- 80..95
    slots.reorder(kept.data(), rows, length);
    std::vector<int64_t> row_first(rows, 0);
    for (int64_t b = 0; b < rows; b += 7) row_first[b] = b % length;
    auto gathered_keys = torch::empty({rows, heads, length, head_dim});
    auto gathered_values = torch::empty_like(gathered_keys);
    auto bias = torch::zeros({rows, 1, 1, length});
    for (int64_t b = 0; b < rows; ++b) {
      for (int64_t s = 0; s < length; ++s) {
        gathered_keys.select(0, b).select(1, s).copy_(keys.select(0, slots.slot(b, s)).select(1, s));
        gathered_values.select(0, b).select(1, s).copy_(values.select(0, slots.slot(b, s)).select(1, s));
      }
      bias.index_put_({b, 0, 0, torch::indexing::Slice(0, row_first[b])}, -kInf);
    }
    ASSERT_GE(2 * keys.numel() * keys.element_size(), int64_t{2} << 20);
    EXPECT_TENSOR_NEAR(step_attention(q, keys, values, {}, 0, &row_first, &slots),
                       reference(q, gathered_keys, gathered_values, bias, 0).to(torch::kFloat32), 1e-5);
  }
  {  // cross-attention: each sentence's K beams as K queries over its encoder output, bfloat16
    const int64_t sources = 64, beam = 4, length = 40;
    const auto q = torch::randn({sources, beam, heads, head_dim}).transpose(1, 2).to(torch::kBFloat16);
    auto keys = torch::randn({sources, heads, length, head_dim}).to(torch::kBFloat16);
    auto values = torch::randn({sources, heads, length, head_dim}).to(torch::kBFloat16);
    auto bias = torch::zeros({sources, 1, 1, length}, torch::kBFloat16);
    for (int64_t m = 0; m < sources; m += 3) bias.index_put_({m, 0, 0, torch::indexing::Slice(10 + m % 30)}, -kInf);
    const auto expected = reference(q, keys, values, bias, 0).to(torch::kFloat32);
    for (int64_t m = 0; m < sources; m += 3) {  // padding tails are never read
      keys[m].narrow(1, 10 + m % 30, length - 10 - m % 30).fill_(std::nan(""));
      values[m].narrow(1, 10 + m % 30, length - 10 - m % 30).fill_(std::nan(""));
    }
    ASSERT_GE(2 * keys.numel() * keys.element_size(), int64_t{2} << 20);
    EXPECT_TENSOR_NEAR(step_attention(q, keys, values, bias).to(torch::kFloat32), expected, 3e-2);
  }
}

TEST(StepAttention, OnlyForCpuFloatOutsideAutograd) {
  EXPECT_TRUE(step_attention_supported(torch::zeros({1, 1, 1, 4})));
  EXPECT_FALSE(step_attention_supported(torch::zeros({1, 1, 1, 4}, torch::kFloat64)));
  EXPECT_FALSE(step_attention_supported(torch::zeros({1, 1, 1, 4}).requires_grad_()));
  EXPECT_THROW(step_attention(torch::zeros({2, 1, 1, 4}), torch::zeros({2, 1, 3, 5}), torch::zeros({2, 1, 3, 5}), {}),
               c10::Error);
}

}  // namespace
}  // namespace tfm
