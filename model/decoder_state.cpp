#include "model/decoder_state.h"

#include <algorithm>

#include <torch/torch.h>

namespace tfm {
namespace {

/// Cache capacities are multiples of this many positions. Beam search reorders, and so
/// reallocates, every cache every step: with the capacity a multiple of 16 the buffer freed at
/// one step is exactly the size the next step asks for, for 16 steps in a row, so the allocator
/// reuses it. Growing sizes every step left freed buffers too small for reuse and held a heap
/// ~1.6x the live caches; doubling the capacity held up to twice the filled cache.
constexpr int64_t kCapacityQuantum = 16;

int64_t capacity_for(int64_t positions) {
  return (positions + kCapacityQuantum - 1) / kCapacityQuantum * kCapacityQuantum;
}

/// Writes x [N, H, 1, Dh] at position `step` of buffer [capacity, N, H, Dh], doubling the
/// capacity (and keeping positions 0..step-1) when it is full.
void write_position(torch::Tensor& buffer, const torch::Tensor& x, int64_t step) {
  if (!buffer.defined() || step >= buffer.size(0)) {
    const int64_t capacity = capacity_for(std::max<int64_t>(1, 2 * step));
    auto grown = torch::empty({capacity, x.size(0), x.size(1), x.size(3)}, x.options());
    if (buffer.defined() && step > 0) grown.narrow(0, 0, step).copy_(buffer.narrow(0, 0, step));
    buffer = grown;
  }
  buffer.select(0, step).copy_(x.squeeze(2));
}

/// Rows `index` of a time-major cache, copying only the `filled` positions into a buffer with room
/// for at least one more. Caches are decoding state, never differentiated through, so the copy
/// runs outside autograd.
torch::Tensor reorder_filled(const torch::Tensor& buffer, const torch::Tensor& index, int64_t filled) {
  torch::NoGradGuard no_grad;
  auto out = torch::empty({capacity_for(filled + 1), index.size(0), buffer.size(2), buffer.size(3)}, buffer.options());
  if (filled > 0) {
    auto destination = out.narrow(0, 0, filled);  // contiguous: the first positions of a time-major buffer
    at::index_select_out(destination, buffer.narrow(0, 0, filled), 1, index);
  }
  return out;
}

/// Rows `index` of every layer's self-attention cache (the filled positions only).
void reorder_self_caches(std::vector<LayerCache>& layers, const torch::Tensor& index, int64_t filled) {
  for (auto& layer : layers) {
    if (!layer.self_k.defined()) continue;
    layer.self_k = reorder_filled(layer.self_k, index, filled);
    layer.self_v = reorder_filled(layer.self_v, index, filled);
  }
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> LayerCache::append(const torch::Tensor& k, const torch::Tensor& v,
                                                           int64_t step) {
  write_position(self_k, k, step);
  write_position(self_v, v, step);
  // [step+1, N, H, Dh] -> [N, H, step+1, Dh]
  return {self_k.narrow(0, 0, step + 1).permute({1, 2, 0, 3}), self_v.narrow(0, 0, step + 1).permute({1, 2, 0, 3})};
}

void DecoderState::repeat_rows(int64_t times) {
  TORCH_CHECK(times >= 1, "repeat_rows: times must be >= 1");
  if (times == 1) return;
  if (!layers.empty() && layers.front().self_k.defined()) {
    const auto& cache = layers.front().self_k;  // [capacity, N, H, Dh]
    const auto index = torch::arange(cache.size(1), torch::TensorOptions(torch::kLong).device(cache.device()))
                           .repeat_interleave(times);
    reorder_self_caches(layers, index, step);
  }
  rows_per_memory *= times;
}

void DecoderState::reorder(const torch::Tensor& rows, bool same_memory) {
  const auto index = rows.to(memory_bias.device(), torch::kLong);
  reorder_self_caches(layers, index, step);
  if (same_memory) return;
  // The memory row each block of rows_per_memory new rows reads.
  auto memory_rows = index;
  if (rows_per_memory > 1) {
    const int64_t group = rows_per_memory;
    TORCH_CHECK(index.size(0) % group == 0, "reorder: ", index.size(0), " rows do not form blocks of ", group);
    const auto blocks = index.view({-1, group}).div(group, "floor");  // [M', K]: memory row of each new row
    memory_rows = blocks.select(1, 0);
    TORCH_CHECK(blocks.eq(memory_rows.unsqueeze(1)).all().item<bool>(), "reorder: a block of ", group,
                " rows reads more than one encoder output");
  }
  auto select = [&](torch::Tensor& tensor) {
    if (tensor.defined()) tensor = tensor.index_select(0, memory_rows);
  };
  for (auto& layer : layers) {
    select(layer.memory_k);
    select(layer.memory_v);
  }
  select(memory_bias);
}

}  // namespace tfm
