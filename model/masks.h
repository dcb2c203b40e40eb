#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

// Attention masks are bool tensors broadcastable to [B, H, T, S]: true = the query may attend
// to that key. Combine them with `&`.

/// Keys that are real tokens. ids: [B, S] -> [B, 1, 1, S]
torch::Tensor padding_mask(const torch::Tensor& ids, int64_t pad_id);

/// §3.2.3: position t attends to positions <= t only. -> [1, 1, T, T]
torch::Tensor causal_mask(int64_t length, const torch::Device& device);

/// Restricted self-attention (Table 1): query i (at absolute position i + query_offset) sees keys
/// j with |i + query_offset - j| <= window. -> [1, 1, T, S]
torch::Tensor window_mask(int64_t queries, int64_t keys, int64_t window, int64_t query_offset,
                          const torch::Device& device);

}  // namespace tfm
