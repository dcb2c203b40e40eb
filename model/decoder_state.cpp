#include "model/decoder_state.h"

#include <torch/torch.h>

namespace tfm {

void DecoderState::reorder(const torch::Tensor& rows, bool same_memory) {
  const auto index = rows.to(memory_mask.device(), torch::kLong);
  auto select = [&](torch::Tensor& tensor) {
    if (tensor.defined()) tensor = tensor.index_select(0, index);
  };
  for (auto& layer : layers) {
    select(layer.self_k);
    select(layer.self_v);
    if (same_memory) continue;
    select(layer.memory_k);
    select(layer.memory_v);
  }
  if (!same_memory) select(memory_mask);
}

}  // namespace tfm
