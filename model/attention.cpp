#include "model/attention.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <optional>

#include "model/attention_softmax.h"
#include "model/dropout.h"
#include "model/parameter_init.h"
#include "model/step_attention.h"
#include "runtime/kernels.h"

namespace tfm {

torch::Tensor attention_weights(const torch::Tensor& scores, const torch::Tensor& mask) {
  if (!mask.defined()) return torch::softmax(scores, -1);
  // An additive mask (0 or -inf): one add instead of the boolean mask's four ops, for decoding
  // steps, where every query has a key to attend to.
  if (mask.is_floating_point()) return torch::softmax(scores + mask, -1);
  const auto weights =
      torch::softmax(scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity()), -1);
  // A row with every key masked is all -inf and softmaxes to NaN; it attends to nothing instead.
  const auto has_key = mask.any(-1, /*keepdim=*/true);  // [B|1, H|1, T|1, 1]
  // Padding and causal masks leave every query a key; on the CPU, knowing so costs less than the
  // fill and its backward over every weight (on CUDA the check would wait for the device).
  if (mask.is_cpu() && has_key.all().item<bool>()) return weights;
  return weights.masked_fill(has_key.logical_not(), 0.0);
}

torch::Tensor attend(const torch::Tensor& scores, const torch::Tensor& v, const torch::Tensor& mask, double dropout,
                     bool training) {
  const auto weights = apply_dropout(attention_weights(scores, mask), dropout, training);
  return torch::matmul(weights, v);  // [B, H, T, Dh]
}

namespace {

/// Xavier-uniform weights over each of `blocks` equal row blocks, and a zero bias.
void xavier_blocks(Linear& projection, int64_t blocks) {
  torch::NoGradGuard no_grad;
  for (const auto& block : projection->weight.chunk(blocks, 0)) torch::nn::init::xavier_uniform_(block);
  projection->bias.zero_();
}

}  // namespace

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const MultiHeadAttentionOptions& options_) : options(options_) {
  const int64_t d = options.d_model();
  TORCH_CHECK(d % options.heads() == 0, "d_model must be divisible by heads");
  // Each projection is initialised as soon as it exists: the order of random draws, and so a
  // seed's model, stays what it was.
  const bool initialise = !parameter_init_skipped();
  if (options.self_attention()) {
    in_proj = register_module("in_proj", Linear(LinearOptions(d, 3 * d)));
    // Xavier over each [D, D] block, as if W^Q, W^K, W^V were separate matrices.
    if (initialise) xavier_blocks(in_proj, 3);
  } else {
    q_proj = register_module("q_proj", Linear(LinearOptions(d, d)));
    kv_proj = register_module("kv_proj", Linear(LinearOptions(d, 2 * d)));
    if (initialise) {
      xavier_blocks(q_proj, 1);
      xavier_blocks(kv_proj, 2);
    }
  }
  out_proj = register_module("out_proj", Linear(LinearOptions(d, d)));
  if (initialise) xavier_blocks(out_proj, 1);
  scorer = register_module(
      "scorer", AttentionScorer(AttentionScorerOptions(options.score(), options.heads(), d / options.heads())));
}

std::vector<torch::Tensor> MultiHeadAttentionImpl::split_heads(const torch::Tensor& projected, int64_t n) const {
  const int64_t batch = projected.size(0);
  const int64_t time = projected.size(1);
  const int64_t heads = options.heads();
  const int64_t head_dim = options.d_model() / heads;
  if (projected.is_contiguous() && !(torch::GradMode::is_enabled() && projected.requires_grad())) {
    // One strided view per part instead of a view, a permute and an unbind: a decoding step splits
    // every layer's projections, and those ops cost more than a small step's products do.
    std::vector<torch::Tensor> parts;
    const int64_t d = heads * head_dim;
    for (int64_t i = 0; i < n; ++i) {
      parts.push_back(projected.as_strided({batch, heads, time, head_dim}, {time * n * d, head_dim, n * d, 1},
                                           projected.storage_offset() + i * d));  // [B, H, T, Dh]
    }
    return parts;
  }
  // [B, T, n*D] -> [B, T, n, H, Dh] -> [n, B, H, T, Dh]
  return projected.view({batch, time, n, heads, head_dim}).permute({2, 0, 3, 1, 4}).unbind(0);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::project_qkv(const torch::Tensor& x) {
  const auto parts = split_heads(in_proj(x), 3);
  return {parts[0], parts[1], parts[2]};
}

torch::Tensor MultiHeadAttentionImpl::project_q(const torch::Tensor& x) { return split_heads(q_proj(x), 1)[0]; }

std::tuple<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::project_kv(const torch::Tensor& memory) {
  const auto parts = split_heads(kv_proj(memory), 2);
  return {parts[0], parts[1]};
}

torch::Tensor fused_scaled_dot_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& mask, double dropout) {
  // The [B, H, T, S] scores are never written out, and q, k, v are read through their strided
  // head views. A query with every key masked gets zeros, as attend() gives.
  std::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask;
  return at::scaled_dot_product_attention(q, k, v, attn_mask, dropout);
}

torch::Tensor MultiHeadAttentionImpl::padding_bias(const torch::Tensor& q, const torch::Tensor& k,
                                                   const torch::Tensor& mask) const {
  const bool per_query_kernel = options.score() == AttentionScore::kScaledDot && fused_kernels() && !is_training() &&
                                step_attention_supported(q) && k.scalar_type() == q.scalar_type();
  // A key-padding mask is [B, 1, 1, S] of booleans: the same keys for every head and query.
  const bool key_padding = mask.defined() && mask.scalar_type() == torch::kBool && mask.dim() == 4 &&
                           mask.size(0) == q.size(0) && mask.size(1) == 1 && mask.size(2) == 1 &&
                           mask.size(3) == k.size(2);
  if (!per_query_kernel || !key_padding) return {};
  return torch::zeros(mask.sizes(), q.options())
      .masked_fill_(mask.logical_not(), -std::numeric_limits<float>::infinity());
}

torch::Tensor MultiHeadAttentionImpl::attend_heads(const torch::Tensor& q, const torch::Tensor& k,
                                                   const torch::Tensor& v, const torch::Tensor& mask,
                                                   torch::Tensor* weights) {
  torch::Tensor context;  // [B, H, T, Dh]
  // The fused kernel (flash or memory-efficient attention) runs on CUDA, where it saves writing
  // out the [B, H, T, S] scores. On the CPU, LibTorch's flash kernel was slower for incremental
  // decoding, no faster for training, and fragmented jemalloc's heap until training memory grew
  // without bound (BENCHMARKS.md, "Speed, second run"). Both paths compute the same function
  // (tests/model/attention_test.cpp).
  const bool fused = fused_kernels() && q.is_cuda() && weights == nullptr;  // the fused kernel keeps no weights
  if (weights != nullptr) {
    *weights = attention_weights(scorer(q, k), mask);  // [B, H, T, S]
    context = torch::matmul(apply_dropout(*weights, options.dropout(), is_training()), v);
  } else if (options.score() == AttentionScore::kScaledDot && fused) {
    context = fused_scaled_dot_attention(q, k, v, mask, is_training() ? options.dropout() : 0.0);
  } else if (options.score() == AttentionScore::kScaledDot && fused_kernels() && is_training() &&
             options.dropout() < 1.0 && attention_softmax_supported(q, mask)) {
    // bf16 training on the CPU: the scale, mask, softmax and dropout in one pass each way.
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
    // q, k, v are head views of the projection [B, T, n, H, Dh]: one copy each into [B, H, T, Dh]
    // keeps Dh innermost, where matmul's own reshape copied k^T element by element.
    const auto scores = torch::matmul(q.contiguous(), k.contiguous().transpose(-2, -1));  // [B, H, T, S]
    context = torch::matmul(attention_softmax(scores, mask, scale, options.dropout(), true), v.contiguous());
  } else if (const auto bias = padding_bias(q, k, mask); bias.defined()) {
    // Inference on the CPU under a key-padding mask (the encoder's): each query's softmax and
    // weighted sum by itself, over its own sentence's keys only, so that a sentence's bits never
    // depend on the batch it is padded into (a padded length picks different matmul kernels).
    return out_proj(step_attention(q, k, v, bias));
  } else {
    context = attend(scorer(q, k), v, mask, options.dropout(), is_training());
  }
  const int64_t batch = context.size(0);
  const int64_t time = context.size(2);
  // Concat(head_1, ..., head_h) W^O: [B, H, T, Dh] -> [B, T, H*Dh]
  return out_proj(context.transpose(1, 2).reshape({batch, time, options.d_model()}));
}

torch::Tensor MultiHeadAttentionImpl::attend_cached(const torch::Tensor& q, const torch::Tensor& k,
                                                    const torch::Tensor& v, const torch::Tensor& bias, int64_t first,
                                                    const std::vector<int64_t>* row_first, const CacheSlots* slots) {
  if (options.score() == AttentionScore::kScaledDot && fused_kernels() && !is_training() &&
      step_attention_supported(q)) {
    return out_proj(step_attention(q, k, v, bias, first, row_first, slots));
  }
  if (slots != nullptr && !slots->identity()) {
    return attend_cached(q, gather_slots(k, *slots), gather_slots(v, *slots), bias, first, row_first);
  }
  if (k.scalar_type() != q.scalar_type()) {
    return attend_cached(q, k.to(q.scalar_type()), v.to(q.scalar_type()), bias, first, row_first);
  }
  auto mask = bias;
  if (first > 0 || row_first != nullptr) {
    const int64_t length = k.size(2);
    const auto positions = torch::arange(length, torch::TensorOptions(torch::kLong).device(k.device()));
    auto starts = torch::full({1}, first, torch::kLong);  // [B] or [1]
    if (row_first != nullptr) starts = torch::tensor(*row_first, torch::kLong).clamp_min(first);
    const auto kept =
        positions.view({1, 1, 1, length}).ge(starts.to(k.device()).view({-1, 1, 1, 1}));  // [B|1, 1, 1, S]
    mask = bias.defined() ? bias.masked_fill(kept.logical_not(), -std::numeric_limits<float>::infinity()) : kept;
  }
  return attend_heads(q, k, v, mask);
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                              torch::Tensor* weights) {
  TORCH_CHECK(options.self_attention(), "cross-attention needs a memory argument");
  const int64_t d = options.d_model();
  return attend_projections(in_proj(x), torch::Tensor(), {0, d, 2 * d}, mask, weights);
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                              const torch::Tensor& mask, torch::Tensor* weights) {
  TORCH_CHECK(!options.self_attention(), "self-attention takes no memory argument");
  const auto keys_values = kv_proj(memory);
  return attend_projections(q_proj(x), keys_values, {0, 0, options.d_model()}, mask, weights);
}

torch::Tensor MultiHeadAttentionImpl::attend_projections(const torch::Tensor& queries, const torch::Tensor& memory,
                                                         HeadColumns columns, const torch::Tensor& mask,
                                                         torch::Tensor* weights) {
  // Self-attention passes no memory: q, k and v are columns of one projection.
  const torch::Tensor& keys_values = memory.defined() ? memory : queries;
  const int64_t heads = options.heads();
  const int64_t head_dim = options.d_model() / heads;
  if (weights == nullptr && options.score() == AttentionScore::kScaledDot && fused_kernels() && is_training() &&
      options.dropout() < 1.0 && head_attention_supported(queries, keys_values, head_dim, mask)) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    return out_proj(
        head_attention(queries, keys_values, columns, heads, head_dim, mask, scale, options.dropout(), true));
  }
  if (!memory.defined()) {
    const auto parts = split_heads(queries, 3);
    return attend_heads(parts[0], parts[1], parts[2], mask, weights);
  }
  const auto parts = split_heads(memory, 2);
  return attend_heads(split_heads(queries, 1)[0], parts[0], parts[1], mask, weights);
}

}  // namespace tfm
