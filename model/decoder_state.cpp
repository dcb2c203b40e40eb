#include "model/decoder_state.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>

#include <torch/torch.h>

namespace tfm {
namespace {

/// Cache capacities are multiples of this many positions: a cache grows (a new buffer and a copy
/// of the filled positions) once every 16 steps, and wastes at most 15 positions.
constexpr int64_t kCapacityQuantum = 16;

int64_t capacity_for(int64_t positions) {
  return (positions + kCapacityQuantum - 1) / kCapacityQuantum * kCapacityQuantum;
}

/// Writes x [N, H, 1, Dh] at position `step` of buffer [capacity, N, H, Dh] of `dtype`, growing the
/// capacity (and keeping positions 0..step-1) when it is full.
void write_position(torch::Tensor& buffer, const torch::Tensor& x, int64_t step, torch::Dtype dtype) {
  if (!buffer.defined() || step >= buffer.size(0)) {
    auto grown = torch::empty({capacity_for(step + 1), x.size(0), x.size(1), x.size(3)}, x.options().dtype(dtype));
    if (buffer.defined() && step > 0) grown.narrow(0, 0, step).copy_(buffer.narrow(0, 0, step));
    buffer = grown;
  }
  buffer.select(0, step).copy_(x.squeeze(2));
}

/// Whether each row of a time-major cache [capacity, N, H, Dh] is one block of H x Dh elements
/// (positions may hold more rows than N: a cache that rows left in place).
bool rows_packed(const torch::Tensor& cache) {
  return cache.stride(3) == 1 && cache.stride(2) == cache.size(3) && cache.stride(1) == cache.size(2) * cache.size(3);
}

/// Whether new row i <- old row index[i] can be done in place, a block of `group` rows at a time:
/// new block j reads old block b_j only, b_j >= j, and b_j grows with j. Beam search's reorders
/// are of this kind (a sentence's K rows stay together; finished sentences leave, the others
/// keep their order), and then the old block j is consumed before new block j overwrites it.
bool reorders_in_place(const int64_t* index, int64_t rows, int64_t old_rows, int64_t group) {
  if (rows > old_rows || rows % group != 0) return false;
  int64_t previous = -1;
  for (int64_t j = 0; j < rows / group; ++j) {
    const int64_t block = index[j * group] / group;
    if (block < j || block <= previous) return false;
    for (int64_t i = j * group; i < (j + 1) * group; ++i) {
      if (index[i] < 0 || index[i] >= old_rows || index[i] / group != block) return false;
    }
    previous = block;
  }
  return true;
}

/// The row copies of an in-place reorder (see reorders_in_place), the same at every position.
struct InPlaceMoves {
  /// Rows whose source is itself overwritten by the reorder: read into a buffer before any write.
  std::vector<std::pair<int64_t, int64_t>> buffered;  // (destination, source)
  /// Rows whose source stays as it is (or lies in a later block, written only after this one):
  /// copied directly, once.
  std::vector<std::pair<int64_t, int64_t>> direct;  // (destination, source)
};

/// Which rows of new row i <- old row index[i] (i < rows, blocks of `group`) move, and which of
/// them need a buffer: a row's source needs one only if the same block overwrites it.
InPlaceMoves in_place_moves(const int64_t* index, int64_t rows, int64_t group) {
  InPlaceMoves moves;
  for (int64_t first = 0; first < rows; first += group) {
    for (int64_t i = first; i < first + group; ++i) {
      const int64_t source = index[i];
      if (source == i) continue;
      const bool overwritten = source >= first && source < first + group && index[source] != source;
      (overwritten ? moves.buffered : moves.direct).emplace_back(i, source);
    }
  }
  return moves;
}

/// Applies `moves` to the `filled` positions of a time-major cache [capacity, N, H, Dh] in place;
/// the cache becomes its first `rows` rows. No buffer is allocated but one for the buffered rows
/// of a position: the rows of a position stay where they were, N' of N in use.
void reorder_in_place(torch::Tensor& cache, const InPlaceMoves& moves, int64_t rows, int64_t filled) {
  const int64_t row_bytes = cache.stride(1) * cache.element_size();
  const int64_t position_bytes = cache.stride(0) * cache.element_size();
  auto* base = static_cast<char*>(cache.data_ptr());
  at::parallel_for(0, filled, 1, [&](int64_t begin, int64_t end) {
    std::vector<char> moved(moves.buffered.size() * row_bytes);
    for (int64_t t = begin; t < end; ++t) {
      char* position = base + t * position_bytes;
      // All buffered reads before any write: a buffered row's source is another's destination.
      for (size_t m = 0; m < moves.buffered.size(); ++m) {
        std::memcpy(moved.data() + m * row_bytes, position + moves.buffered[m].second * row_bytes, row_bytes);
      }
      for (const auto& [destination, source] : moves.direct) {
        std::memcpy(position + destination * row_bytes, position + source * row_bytes, row_bytes);
      }
      for (size_t m = 0; m < moves.buffered.size(); ++m) {
        std::memcpy(position + moves.buffered[m].first * row_bytes, moved.data() + m * row_bytes, row_bytes);
      }
    }
  });
  cache = cache.narrow(1, 0, rows);
}

/// destination[t, i] = source[t, index[i]] for t < T: destination [T, N', H, Dh] contiguous, source
/// [T, N, H, Dh] contiguous from dimension 1 on, index [N'] int64 on the CPU. Copies whole rows
/// of H x Dh on every thread; LibTorch's index_select along dimension 1 copies them on one.
void gather_rows(torch::Tensor& destination, const torch::Tensor& source, const torch::Tensor& index) {
  const int64_t positions = destination.size(0), rows = destination.size(1), source_rows = source.size(1);
  TORCH_CHECK(index.numel() == 0 || (index.min().item<int64_t>() >= 0 && index.max().item<int64_t>() < source_rows),
              "reorder: a row index outside 0..", source_rows - 1);
  const int64_t row_bytes = source.stride(1) * source.element_size();
  const int64_t position_bytes = source.stride(0) * source.element_size();
  const auto* from = static_cast<const char*>(source.data_ptr());
  auto* to = static_cast<char*>(destination.data_ptr());
  const int64_t* ids = index.data_ptr<int64_t>();
  const int64_t grain = std::max<int64_t>(1, 32768 / row_bytes);
  at::parallel_for(0, positions * rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / rows, n = i % rows;
      std::memcpy(to + i * row_bytes, from + t * position_bytes + ids[n] * row_bytes, row_bytes);
    }
  });
}

/// Rows `index` of a time-major cache, copying only the `filled` positions into a buffer with room
/// for at least one more. Caches are decoding state, never differentiated through, so the copy
/// runs outside autograd.
torch::Tensor reorder_filled(const torch::Tensor& buffer, const torch::Tensor& index, int64_t filled) {
  torch::NoGradGuard no_grad;
  auto out = torch::empty({capacity_for(filled + 1), index.size(0), buffer.size(2), buffer.size(3)}, buffer.options());
  if (filled > 0) {
    auto destination = out.narrow(0, 0, filled);  // contiguous: the first positions of a time-major buffer
    const auto source = buffer.narrow(0, 0, filled);
    if (buffer.is_cpu() && rows_packed(buffer)) {
      gather_rows(destination, source, index.to(torch::kCPU).contiguous());
    } else {
      at::index_select_out(destination, source, 1, index);
    }
  }
  return out;
}

/// Rows `index` of every layer's self-attention cache (the filled positions only): in place where
/// the reorder allows (reorders_in_place, with blocks of `group` rows), else into new buffers.
void reorder_self_caches(std::vector<LayerCache>& layers, const torch::Tensor& index, int64_t filled, int64_t group) {
  if (layers.empty() || !layers.front().self_k.defined()) return;
  const auto& cache = layers.front().self_k;  // [capacity, N, H, Dh], every layer alike
  if (cache.is_cpu() && rows_packed(cache)) {
    const auto rows = index.to(torch::kCPU).contiguous();
    const int64_t* data = rows.data_ptr<int64_t>();
    if (reorders_in_place(data, rows.numel(), cache.size(1), group)) {
      const auto moves = in_place_moves(data, rows.numel(), group);
      for (auto& layer : layers) {
        reorder_in_place(layer.self_k, moves, rows.numel(), filled);
        reorder_in_place(layer.self_v, moves, rows.numel(), filled);
      }
      return;
    }
  }
  for (auto& layer : layers) {
    layer.self_k = reorder_filled(layer.self_k, index, filled);
    layer.self_v = reorder_filled(layer.self_v, index, filled);
  }
}

/// [M, H, S, Dh] (or a bias [M, 1, 1, S]) padded with `fill` to `length` positions along dim 2 or 3.
torch::Tensor pad_positions(const torch::Tensor& x, int64_t dim, int64_t length, double fill) {
  const int64_t have = x.size(dim);
  if (have == length) return x;
  auto sizes = x.sizes().vec();
  sizes[dim] = length - have;
  return torch::cat({x, torch::full(sizes, fill, x.options())}, dim);
}

/// A time-major cache [capacity, N, H, Dh] with `added` rows after its N, keeping positions
/// first .. filled-1 of the old rows as positions 0 .. filled-first-1; the new rows read zeros
/// there (masked, but finite: a masked key's weight is 0, and 0 x a stale NaN would not be).
torch::Tensor add_rows(const torch::Tensor& cache, int64_t added, int64_t first, int64_t filled) {
  torch::NoGradGuard no_grad;
  const int64_t kept = filled - first, rows = cache.size(1);
  auto out = torch::empty({capacity_for(kept + 1), rows + added, cache.size(2), cache.size(3)}, cache.options());
  if (kept > 0) {
    out.narrow(0, 0, kept).narrow(1, 0, rows).copy_(cache.narrow(0, first, kept));
    out.narrow(0, 0, kept).narrow(1, rows, added).zero_();
  }
  return out;
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> LayerCache::append(const torch::Tensor& k, const torch::Tensor& v,
                                                           int64_t step) {
  const auto dtype = stored_dtype.value_or(k.scalar_type());
  write_position(self_k, k, step, dtype);
  write_position(self_v, v, step, dtype);
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
    reorder_self_caches(layers, index, step, times);
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
  reorder_self_caches(layers, index, step, rows_per_memory);
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
  auto select = [&](torch::Tensor& tensor) {
    if (tensor.defined()) tensor = tensor.index_select(0, memory_rows);
  };
  for (auto& layer : layers) {
    select(layer.memory_k);
    select(layer.memory_v);
  }
  select(memory_bias);
  if (output_columns.defined()) output_columns.select(memory_rows);
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
      layer.self_k = add_rows(layer.self_k, added, first, step);
      layer.self_v = add_rows(layer.self_v, added, first, step);
    }
  }
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
