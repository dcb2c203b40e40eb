#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Where head_attention() finds queries, keys and values: columns of projection outputs, each
/// [B, T|S, n * D] with head h of a row at column offset + h * Dh.
struct HeadColumns {
  int64_t query = 0, key = 0, value = 0;
};

/// Whether head_attention() takes these: CPU bfloat16 projections [B, T, *] and [B, S, *] with
/// unit column stride, a head size that is a multiple of 16, and a bool mask broadcastable to
/// [B, H, T, S] or none.
bool head_attention_supported(const torch::Tensor& queries, const torch::Tensor& memory, int64_t head_dim,
                              const torch::Tensor& mask);

/// Training's scaled dot-product attention on the CPU in bfloat16, per (sentence, head) in one
/// pass each way, reading q, k and v where the projections wrote them: scores, mask, softmax,
/// dropout and the weighted sum of values forward; the four products and the softmax's backward.
/// The same function as attention_softmax() between two per-head products (tests/model), with the
/// same dropout masks, but without oneDNN: at sentence lengths its batched products ran at
/// ~100 GFLOP/s, needed a primitive built for every new batch shape, and q, k, v and the context
/// were copied to and from [B, H, T, Dh] around them.
/// queries: [B, T, nq * D] (the query projection), memory: [B, S, nk * D] (the key and value
/// projection; may be `queries` itself, for self-attention), bfloat16; mask: bool broadcastable
/// to [B, H, T, S] or undefined (a query with no key gets zeros)
/// -> [B, T, H * Dh] bfloat16, heads side by side: the output projection's input.
/// Differentiable in queries and memory.
torch::Tensor head_attention(const torch::Tensor& queries, const torch::Tensor& memory, HeadColumns columns,
                             int64_t heads, int64_t head_dim, const torch::Tensor& mask, double scale, double dropout,
                             bool training);

}  // namespace tfm
