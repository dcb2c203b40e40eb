#include "model/decoder_state.h"

#include <algorithm>

#include <torch/torch.h>

namespace tfm {
namespace {

/// Writes x [N, H, 1, Dh] at position `step` of buffer [capacity, N, H, Dh], doubling the
/// capacity (and keeping positions 0..step-1) when it is full.
void write_position(torch::Tensor& buffer, const torch::Tensor& x, int64_t step) {
  if (!buffer.defined() || step >= buffer.size(0)) {
    const int64_t capacity = std::max<int64_t>(32, 2 * step);
    auto grown = torch::empty({capacity, x.size(0), x.size(1), x.size(3)}, x.options());
    if (buffer.defined() && step > 0) grown.narrow(0, 0, step).copy_(buffer.narrow(0, 0, step));
    buffer = grown;
  }
  buffer.select(0, step).copy_(x.squeeze(2));
}

/// Rows `index` of a time-major cache, copying only the `filled` positions. Caches are decoding
/// state, never differentiated through, so the copy runs outside autograd.
torch::Tensor reorder_filled(const torch::Tensor& buffer, const torch::Tensor& index, int64_t filled) {
  torch::NoGradGuard no_grad;
  auto out = torch::empty({buffer.size(0), index.size(0), buffer.size(2), buffer.size(3)}, buffer.options());
  if (filled > 0) {
    auto destination = out.narrow(0, 0, filled);  // contiguous: the first positions of a time-major buffer
    at::index_select_out(destination, buffer.narrow(0, 0, filled), 1, index);
  }
  return out;
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> LayerCache::append(const torch::Tensor& k, const torch::Tensor& v,
                                                           int64_t step) {
  write_position(self_k, k, step);
  write_position(self_v, v, step);
  // [step+1, N, H, Dh] -> [N, H, step+1, Dh]
  return {self_k.narrow(0, 0, step + 1).permute({1, 2, 0, 3}), self_v.narrow(0, 0, step + 1).permute({1, 2, 0, 3})};
}

void DecoderState::reorder(const torch::Tensor& rows, bool same_memory) {
  const auto index = rows.to(memory_mask.device(), torch::kLong);
  auto select = [&](torch::Tensor& tensor) {
    if (tensor.defined()) tensor = tensor.index_select(0, index);
  };
  for (auto& layer : layers) {
    if (layer.self_k.defined()) {
      layer.self_k = reorder_filled(layer.self_k, index, step);
      layer.self_v = reorder_filled(layer.self_v, index, step);
    }
    if (same_memory) continue;
    select(layer.memory_k);
    select(layer.memory_v);
  }
  if (!same_memory) select(memory_mask);
}

}  // namespace tfm
