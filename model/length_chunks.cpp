#include "model/length_chunks.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <torch/torch.h>

namespace tfm {

std::vector<LengthChunk> length_chunks(const std::vector<int64_t>& lengths, int64_t chunk_cost) {
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  // Runs of one length are never worth parting, so chunks are runs of whole groups: group g spans
  // sorted rows [bounds[g], bounds[g + 1]).
  std::vector<int64_t> bounds;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || lengths[order[i]] != lengths[order[i - 1]]) bounds.push_back(static_cast<int64_t>(i));
  }
  const auto groups = static_cast<int64_t>(bounds.size());
  bounds.push_back(static_cast<int64_t>(order.size()));
  // cheapest[g]: the least cost of the first g groups in chunks, the last of which starts at group
  // first[g]. A chunk of groups [j, g) costs its rows x its longest length + chunk_cost.
  std::vector<int64_t> cheapest(groups + 1, 0), first(groups + 1, 0);
  for (int64_t g = 1; g <= groups; ++g) {
    cheapest[g] = std::numeric_limits<int64_t>::max();
    for (int64_t j = 0; j < g; ++j) {
      const int64_t cost = cheapest[j] + (bounds[g] - bounds[j]) * lengths[order[bounds[j]]] + chunk_cost;
      if (cost < cheapest[g]) {
        cheapest[g] = cost;
        first[g] = j;
      }
    }
  }
  std::vector<LengthChunk> chunks;
  for (int64_t g = groups; g > 0; g = first[g]) {
    const int64_t begin = bounds[first[g]], end = bounds[g];
    // Rows of no tokens still take one position: a computation over zero positions may fail.
    chunks.push_back({{order.begin() + begin, order.begin() + end}, std::max<int64_t>(1, lengths[order[begin]])});
  }
  std::reverse(chunks.begin(), chunks.end());
  return chunks;
}

std::vector<int64_t> mask_lengths(const torch::Tensor& mask) {
  const auto counts = mask.reshape({mask.size(0), -1}).sum(1).to(torch::kCPU, torch::kLong).contiguous();  // [B]
  return {counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + counts.numel()};
}

torch::Tensor compute_in_length_chunks(const torch::Tensor& tokens, const torch::Tensor& mask,
                                       const std::vector<LengthChunk>& chunks, const RowsComputation& compute) {
  torch::Tensor out;  // [B, S, D], allocated once the first chunk tells D, dtype and device
  for (const auto& chunk : chunks) {
    const auto rows = torch::tensor(chunk.rows, torch::TensorOptions(torch::kLong).device(tokens.device()));
    const auto part = compute(tokens.index_select(0, rows).narrow(1, 0, chunk.longest),
                              mask.index_select(0, rows).narrow(3, 0, chunk.longest));  // [n, L, D]
    if (!out.defined()) out = torch::zeros({tokens.size(0), tokens.size(1), part.size(2)}, part.options());
    out.narrow(1, 0, chunk.longest).index_copy_(0, rows, part);
  }
  return out;
}

}  // namespace tfm
