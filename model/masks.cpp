#include "model/masks.h"

#include <torch/torch.h>

namespace tfm {

torch::Tensor padding_mask(const torch::Tensor& ids, int64_t pad_id) {
  return ids.ne(pad_id).unsqueeze(1).unsqueeze(2);  // [B, 1, 1, S]
}

torch::Tensor causal_mask(int64_t length, const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({length, length}, options).tril().view({1, 1, length, length});
}

torch::Tensor window_mask(int64_t queries, int64_t keys, int64_t window, int64_t query_offset,
                          const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  const auto query_positions = torch::arange(query_offset, query_offset + queries, options).unsqueeze(1);  // [T, 1]
  const auto key_positions = torch::arange(keys, options).unsqueeze(0);                                    // [1, S]
  return (query_positions - key_positions).abs().le(window).view({1, 1, queries, keys});
}

}  // namespace tfm
