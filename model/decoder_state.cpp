#include "model/decoder_state.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>

#include <torch/torch.h>

#include "model/bfloat16_rounding.h"
#include "runtime/page_pool.h"
#include "runtime/streaming_copy.h"

namespace tfm {
namespace {

/// An uninitialized self-attention cache buffer: on the CPU from PagePool::shared(), whose regions
/// serve the next buffer whatever its size (a cache grows by a few positions and loses the rows of
/// finished sentences every few steps; jemalloc kept the holes the smaller ones left).
torch::Tensor cache_buffer(at::IntArrayRef sizes, const torch::TensorOptions& options) {
  if (!options.device().is_cpu() || !PagePool::available()) return torch::empty(sizes, options);
  int64_t elements = 1;
  for (const int64_t size : sizes) elements *= size;
  const auto bytes = static_cast<size_t>(elements) * c10::elementSize(c10::typeMetaToScalarType(options.dtype()));
  void* region = PagePool::shared().take(bytes);
  return torch::from_blob(
      region, sizes, [](void* taken) { PagePool::shared().give_back(taken); }, options);
}

/// A cache's capacity for `positions`: the next multiple of a quantum of 2 positions below 32, 4
/// below 64, 8 below 128 and so on. A cache grows (a new buffer and a copy of the filled positions
/// of the rows still decoding) once every quantum steps and holds at most quantum - 1 unfilled
/// positions. Caches are most of a large batch's heap, and it peaks while most rows still decode:
/// a quantum of 4 held a base-size model's default batch higher than 2 did, and 16 a small model's
/// higher than 4, at speeds within the runs' spread (BENCHMARKS.md). Under a fixed quantum a long
/// sentence's copies would add up with its length squared; this one keeps them near 16 positions
/// a step.
int64_t capacity_for(int64_t positions) {
  int64_t quantum = 2;
  while (quantum * 16 <= positions) quantum *= 2;
  return (positions + quantum - 1) / quantum * quantum;
}

/// Writes x [N, H, 1, Dh] into rows 0..N-1 at position `step` of buffer [capacity, W, H, Dh] of
/// `dtype` (W >= N), growing the capacity (and keeping positions 0..step-1) when it is full.
void write_position(torch::Tensor& buffer, const torch::Tensor& x, int64_t step, torch::Dtype dtype) {
  if (!buffer.defined() || step >= buffer.size(0)) {
    const int64_t width = buffer.defined() ? buffer.size(1) : x.size(0);
    auto grown = cache_buffer({capacity_for(step + 1), width, x.size(1), x.size(3)}, x.options().dtype(dtype));
    if (buffer.defined() && step > 0) grown.narrow(0, 0, step).copy_(buffer.narrow(0, 0, step));
    buffer = grown;
  }
  TORCH_CHECK(x.size(0) <= buffer.size(1), "LayerCache: ", x.size(0), " rows do not fit a cache of ", buffer.size(1));
  const int64_t rows = x.size(0), heads = x.size(1), head_dim = x.size(3);
  const bool same_dtype = x.scalar_type() == buffer.scalar_type();
  const bool rounded = x.scalar_type() == torch::kFloat32 && buffer.scalar_type() == torch::kBFloat16;
  if (buffer.is_cpu() && x.is_cpu() && (same_dtype || rounded) && buffer.is_contiguous() && x.size(2) == 1 &&
      x.stride(3) == 1 && x.stride(1) == head_dim && !x.requires_grad()) {
    // A row's heads lie side by side in x (a projection's head view) as in the buffer: one copy
    // (or rounding, for float32 steps into bfloat16 caches) of H x Dh per row, where select, narrow,
    // squeeze and a strided copy_ cost several times what a step's few rows take to move.
    const int64_t row_elements = heads * head_dim;
    const int64_t row_bytes = row_elements * buffer.element_size();
    const auto* from = static_cast<const char*>(x.data_ptr());
    auto* to = static_cast<char*>(buffer.data_ptr()) + step * buffer.stride(0) * buffer.element_size();
    const int64_t from_row = x.stride(0) * x.element_size();
    const int64_t grain = std::max<int64_t>(1, 65536 / row_bytes);  // a step's few rows: the calling thread
    team_parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        if (same_dtype) {
          std::memcpy(to + n * row_bytes, from + n * from_row, row_bytes);
        } else {
          round_to_bfloat16(reinterpret_cast<const float*>(from + n * from_row),
                            reinterpret_cast<c10::BFloat16*>(to + n * row_bytes), row_elements);
        }
      }
    });
    return;
  }
  buffer.select(0, step).narrow(0, 0, rows).copy_(x.squeeze(2));
}

/// Positions 0..step of a time-major buffer [capacity, W, H, Dh] -> [W, H, step+1, Dh], a view.
torch::Tensor filled_positions(const torch::Tensor& buffer, int64_t step) {
  if (buffer.is_contiguous()) {  // one strided view, not a narrow and a permute
    return buffer.as_strided({buffer.size(1), buffer.size(2), step + 1, buffer.size(3)},
                             {buffer.stride(1), buffer.stride(2), buffer.stride(0), 1}, buffer.storage_offset());
  }
  return buffer.narrow(0, 0, step + 1).permute({1, 2, 0, 3});
}

/// Rows `index` of a time-major cache, copying only the `filled` positions into a buffer with room
/// for at least one more (off the CPU, where no ancestor table is kept). Caches are decoding state,
/// never differentiated through, so the copy runs outside autograd.
torch::Tensor reorder_filled(const torch::Tensor& buffer, const torch::Tensor& index, int64_t filled) {
  torch::NoGradGuard no_grad;
  auto out = torch::empty({capacity_for(filled + 1), index.size(0), buffer.size(2), buffer.size(3)}, buffer.options());
  if (filled > 0) {
    auto destination = out.narrow(0, 0, filled);  // contiguous: the first positions of a time-major buffer
    at::index_select_out(destination, buffer.narrow(0, 0, filled), 1, index);
  }
  return out;
}

/// Cache buffers from this size on are gathered with streaming stores (runtime/streaming_copy.h):
/// a large batch's caches, hundreds of MB that the next step reads from memory anyway. A beam's
/// few rows stay in the CPU's caches for the next step's attention.
constexpr int64_t kStreamedCacheBytes = int64_t{1} << 20;

/// A new time-major cache [capacity, rows + added, H, Dh] holding positions first .. filled-1 of
/// `cache` [capacity, W, H, Dh] as positions 0 .. filled-first-1: row n's from cache row
/// slots.slot(n, t), one copy of H x Dh per row and position; the `added` rows after them read
/// zeros there (masked, but finite: a masked key's weight is 0, and 0 x a stale NaN would not be).
torch::Tensor gather_positions(const torch::Tensor& cache, const CacheSlots& slots, int64_t rows, int64_t first,
                               int64_t filled, int64_t added) {
  torch::NoGradGuard no_grad;
  const int64_t kept = filled - first;
  auto out = cache_buffer({capacity_for(kept + 1), rows + added, cache.size(2), cache.size(3)}, cache.options());
  if (kept <= 0) return out;
  if (added > 0) out.narrow(0, 0, kept).narrow(1, rows, added).zero_();
  const bool streamed = cache.is_cpu() && cache.is_contiguous() && out.nbytes() >= kStreamedCacheBytes;
  if (slots.identity() && !streamed) {
    out.narrow(0, 0, kept).narrow(1, 0, rows).copy_(cache.narrow(0, first, kept).narrow(1, 0, rows));
    return out;
  }
  TORCH_CHECK(cache.is_cpu() && cache.is_contiguous(), "gather_positions: a cache table needs a contiguous CPU cache");
  const int64_t row_bytes = cache.stride(1) * cache.element_size();
  const int64_t from_position = cache.stride(0) * cache.element_size();
  const int64_t to_position = out.stride(0) * out.element_size();
  const auto* from = static_cast<const char*>(cache.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  const int64_t grain = std::max<int64_t>(1, 32768 / row_bytes);
  team_parallel_for(0, kept * rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / rows, n = i % rows;
      char* row = to + t * to_position + n * row_bytes;
      const char* source = from + (first + t) * from_position + slots.slot(n, first + t) * row_bytes;
      if (streamed) {
        streaming_copy(row, source, static_cast<size_t>(row_bytes));
      } else {
        std::memcpy(row, source, static_cast<size_t>(row_bytes));
      }
    }
    if (streamed) streaming_fence();  // before the region ends and the caller reads the rows
  });
  return out;
}

/// Rows `index` of every layer's self-attention cache (the filled positions only). On the CPU the
/// caches stay where they are and `slots` records where each new row's positions lie, while the
/// rows fit the buffers and fill more than half of them; otherwise the rows' positions are gathered
/// into new buffers of their own (and the table reset): a reorder to more rows, or once as many
/// rows as the buffers hold have left, so that the live rows do not thin out among dead ones
/// (bench: reading them scattered cost more than the copies saved). Off the CPU, the filled
/// positions are copied into new buffers.
void reorder_self_caches(std::vector<LayerCache>& layers, CacheSlots& slots, const torch::Tensor& index,
                         int64_t old_rows, int64_t filled) {
  if (layers.empty() || !layers.front().self_k.defined()) return;
  const auto& cache = layers.front().self_k;  // [capacity, W, H, Dh], every layer alike
  if (!cache.is_cpu()) {
    for (auto& layer : layers) {
      layer.self_k = reorder_filled(layer.self_k, index, filled);
      layer.self_v = reorder_filled(layer.self_v, index, filled);
    }
    return;
  }
  const auto rows = index.to(torch::kCPU).contiguous();
  const int64_t count = rows.numel(), width = cache.size(1);
  const int64_t* ids = rows.data_ptr<int64_t>();
  TORCH_CHECK(std::all_of(ids, ids + count, [&](int64_t id) { return id >= 0 && id < old_rows; }),
              "reorder: a row index outside 0..", old_rows - 1);
  slots.reorder(ids, count, filled);
  if (count <= width && 2 * count > width) return;
  for (auto& layer : layers) {
    layer.self_k = gather_positions(layer.self_k, slots, count, 0, filled, 0);
    layer.self_v = gather_positions(layer.self_v, slots, count, 0, filled, 0);
  }
  slots.reset();
}

/// Every layer's stored memory rows that `slots` lists, gathered into tensors of their own
/// [M, H, S, Dh] (row m from stored row slots.slot(m, 0)); the table is then reset.
void gather_memory_rows(std::vector<LayerCache>& layers, CacheSlots& slots) {
  if (slots.identity()) return;
  std::vector<int64_t> stored(static_cast<size_t>(slots.rows()));
  for (int64_t m = 0; m < slots.rows(); ++m) stored[m] = slots.slot(m, 0);
  const auto index = torch::tensor(stored, torch::kLong);
  for (auto& layer : layers) {
    layer.memory_k = layer.memory_k.index_select(0, index);
    layer.memory_v = layer.memory_v.index_select(0, index);
  }
  slots.reset();
}

/// Memory rows `memory_rows` ([M'] indices into the current memory rows) of every layer. On the
/// CPU the keys and values stay where they are and `slots` records the stored row each new row
/// reads, while more than half the stored rows are still read; then (or a reorder to more rows than
/// are stored) they are gathered. Elsewhere they are copied. A finished sentence leaving the batch
/// at nearly every step of a large batch had copied every layer's memory keys and values each time.
void select_memory_rows(std::vector<LayerCache>& layers, CacheSlots& slots, const torch::Tensor& memory_rows) {
  if (layers.empty() || !layers.front().memory_k.defined()) return;
  const auto& stored = layers.front().memory_k;  // [stored, H, S, Dh], every layer alike
  if (!stored.is_cpu()) {
    for (auto& layer : layers) {
      layer.memory_k = layer.memory_k.index_select(0, memory_rows);
      layer.memory_v = layer.memory_v.index_select(0, memory_rows);
    }
    return;
  }
  const auto rows = memory_rows.to(torch::kCPU).contiguous();
  const int64_t count = rows.numel(), current = slots.identity() ? stored.size(0) : slots.rows();
  const int64_t* ids = rows.data_ptr<int64_t>();
  TORCH_CHECK(std::all_of(ids, ids + count, [&](int64_t id) { return id >= 0 && id < current; }),
              "reorder: a memory row outside 0..", current - 1);
  slots.reorder(ids, count, stored.size(2));
  if (2 * count > stored.size(0) && count <= stored.size(0)) return;
  gather_memory_rows(layers, slots);
}

/// [M, H, S, Dh] (or a bias [M, 1, 1, S]) padded with `fill` to `length` positions along dim 2 or 3.
torch::Tensor pad_positions(const torch::Tensor& x, int64_t dim, int64_t length, double fill) {
  const int64_t have = x.size(dim);
  if (have == length) return x;
  auto sizes = x.sizes().vec();
  sizes[dim] = length - have;
  return torch::cat({x, torch::full(sizes, fill, x.options())}, dim);
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> LayerCache::append(const torch::Tensor& k, const torch::Tensor& v,
                                                           int64_t step) {
  const auto dtype = stored_dtype.value_or(k.scalar_type());
  write_position(self_k, k, step, dtype);
  write_position(self_v, v, step, dtype);
  // [step+1, N, H, Dh] -> [N, H, step+1, Dh]
  return {filled_positions(self_k, step), filled_positions(self_v, step)};
}

void DecoderState::repeat_rows(int64_t times) {
  TORCH_CHECK(times >= 1, "repeat_rows: times must be >= 1");
  if (times == 1) return;
  if (!layers.empty() && layers.front().self_k.defined()) {
    const auto index =
        torch::arange(rows(), torch::TensorOptions(torch::kLong).device(memory_bias.device())).repeat_interleave(times);
    reorder_self_caches(layers, cache_slots, index, rows(), step);
  }
  rows_per_memory *= times;
  if (!row_starts.empty()) {
    std::vector<int64_t> starts;
    for (const int64_t start : row_starts) starts.insert(starts.end(), times, start);
    row_starts = std::move(starts);
  }
}

void DecoderState::reorder(const torch::Tensor& rows, bool same_memory) {
  const auto index = rows.to(memory_bias.device(), torch::kLong);
  reorder_self_caches(layers, cache_slots, index, this->rows(), step);
  if (!row_starts.empty()) {
    const auto on_cpu = index.to(torch::kCPU).contiguous();
    const int64_t* ids = on_cpu.data_ptr<int64_t>();
    std::vector<int64_t> starts(on_cpu.numel());
    for (size_t i = 0; i < starts.size(); ++i) starts[i] = row_starts.at(ids[i]);
    row_starts = std::move(starts);
  }
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
  select_memory_rows(layers, memory_slots, memory_rows);
  memory_bias = memory_bias.index_select(0, memory_rows);
  if (output_columns.defined()) output_columns.select(memory_rows);
}

void DecoderState::make_room_for_step() {
  if (layers.empty() || !layers.front().self_k.defined()) return;
  if (step < layers.front().self_k.size(0)) return;  // [capacity, W, H, Dh], every layer alike
  const int64_t live = rows();
  for (auto& layer : layers) {
    layer.self_k = gather_positions(layer.self_k, cache_slots, live, 0, step, 0);
    layer.self_v = gather_positions(layer.self_v, cache_slots, live, 0, step, 0);
  }
  cache_slots.reset();
}

int64_t DecoderState::rows() const { return memory_bias.size(0) * rows_per_memory; }

std::vector<int64_t> DecoderState::next_positions() const {
  std::vector<int64_t> positions(rows(), step);
  for (size_t n = 0; n < row_starts.size(); ++n) positions[n] = step - row_starts[n];
  return positions;
}

void DecoderState::append(DecoderState other) {
  TORCH_CHECK(other.step == 0, "append: the joining state has already decoded");
  TORCH_CHECK(other.rows_per_memory == rows_per_memory, "append: ", other.rows_per_memory,
              " rows per encoder output join ", rows_per_memory);
  TORCH_CHECK(other.layers.size() == layers.size(), "append: states of different models");
  TORCH_CHECK(output_columns.defined() == other.output_columns.defined(),
              "append: a state with a shortlist and one without cannot join");
  gather_memory_rows(layers, memory_slots);  // padded and joined below, as tensors of their own
  gather_memory_rows(other.layers, other.memory_slots);
  const int64_t old_rows = rows(), added = other.rows();
  // The first position any row still reads: positions before it are dropped from the caches.
  const int64_t first = row_starts.empty() ? 0 : *std::min_element(row_starts.begin(), row_starts.end());
  const int64_t length = std::max(memory_bias.size(3), other.memory_bias.size(3));
  for (size_t i = 0; i < layers.size(); ++i) {
    auto& layer = layers[i];
    auto& joining = other.layers[i];
    layer.memory_k =
        torch::cat({pad_positions(layer.memory_k, 2, length, 0.0), pad_positions(joining.memory_k, 2, length, 0.0)});
    layer.memory_v =
        torch::cat({pad_positions(layer.memory_v, 2, length, 0.0), pad_positions(joining.memory_v, 2, length, 0.0)});
    if (step > 0 && layer.self_k.defined()) {
      layer.self_k = gather_positions(layer.self_k, cache_slots, old_rows, first, step, added);
      layer.self_v = gather_positions(layer.self_v, cache_slots, old_rows, first, step, added);
    }
  }
  cache_slots.reset();
  const double masked = -std::numeric_limits<double>::infinity();
  memory_bias =
      torch::cat({pad_positions(memory_bias, 3, length, masked), pad_positions(other.memory_bias, 3, length, masked)});
  if (output_columns.defined()) output_columns.append(other.output_columns);
  if (step == 0) return;  // nothing decoded yet: every row begins at 0
  if (row_starts.empty()) row_starts.assign(old_rows, 0);
  for (auto& start : row_starts) start -= first;
  step -= first;
  row_starts.insert(row_starts.end(), added, step);
}

}  // namespace tfm
