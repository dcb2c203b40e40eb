#include "data/batch_split.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <torch/torch.h>

#include "text/special_ids.h"

namespace tfm {
namespace {

/// Non-pad positions of each right-padded row of `rows` [B, L].
std::vector<int64_t> row_lengths(const torch::Tensor& rows) {
  const auto lengths = rows.ne(kPadId).sum(1).to(torch::kCPU, torch::kLong).contiguous();
  return {lengths.data_ptr<int64_t>(), lengths.data_ptr<int64_t>() + lengths.numel()};
}

/// Rows in the order they are cut, and the costs that decide the cut.
struct RowPlan {
  std::vector<int64_t> order;  // batch rows, by target length, source length, place
  std::vector<int64_t> source, target;
  TokenCosts costs;

  /// Greedy contiguous groups of `order` whose costs stay within `bound`: [start, end) of each.
  std::vector<std::pair<size_t, size_t>> groups_within(double bound) const {
    std::vector<std::pair<size_t, size_t>> groups;
    size_t start = 0;
    while (start < order.size()) {
      size_t end = start;
      int64_t longest_source = 0, longest_target = 0;
      while (end < order.size()) {
        const int64_t s = std::max(longest_source, source[order[end]]);
        const int64_t t = std::max(longest_target, target[order[end]]);
        if (end > start && cost(end + 1 - start, s, t) > bound) break;
        longest_source = s;
        longest_target = t;
        ++end;
      }
      groups.emplace_back(start, end);
      start = end;
    }
    return groups;
  }

  double cost(size_t rows, int64_t longest_source, int64_t longest_target) const {
    return static_cast<double>(rows) *
           (costs.source * static_cast<double>(longest_source) + costs.target * static_cast<double>(longest_target));
  }
};

/// The contiguous cut of plan.order into at most `parts` groups with the least largest cost: a
/// group's cost only grows as it takes rows, so greedy filling within a bound is optimal for that
/// bound, and bisection finds the least bound that needs no more than `parts` groups.
std::vector<std::pair<size_t, size_t>> least_costly_cut(const RowPlan& plan, int64_t parts) {
  double low = 0, high = 0;
  int64_t longest_source = 0, longest_target = 0;
  for (const int64_t row : plan.order) {
    low = std::max(low, plan.cost(1, plan.source[row], plan.target[row]));
    longest_source = std::max(longest_source, plan.source[row]);
    longest_target = std::max(longest_target, plan.target[row]);
  }
  high = plan.cost(plan.order.size(), longest_source, longest_target);
  for (int step = 0; step < 60 && high - low > 1e-9 * high; ++step) {
    const double middle = low + (high - low) / 2;
    if (static_cast<int64_t>(plan.groups_within(middle).size()) <= parts) {
      high = middle;
    } else {
      low = middle;
    }
  }
  return plan.groups_within(high);
}

/// rows [B', L] trimmed to the longest row's non-pad count (right-padded rows).
torch::Tensor trim_padding(const torch::Tensor& rows) {
  const int64_t longest = rows.ne(kPadId).sum(1).max().item<int64_t>();
  return rows.narrow(1, 0, longest).contiguous();
}

int64_t real_tokens(const torch::Tensor& rows) { return rows.ne(kPadId).sum().item<int64_t>(); }

}  // namespace

std::vector<Batch> split_batch(const Batch& batch, int64_t parts, const TokenCosts& costs) {
  if (parts < 1) throw std::invalid_argument("split_batch: parts must be >= 1");
  if (parts == 1 || batch.source.size(0) <= 1) return {batch};
  RowPlan plan;
  plan.source = row_lengths(batch.source);
  plan.target = row_lengths(batch.target_out);
  plan.costs = costs;
  plan.order.resize(plan.source.size());
  std::iota(plan.order.begin(), plan.order.end(), 0);
  std::stable_sort(plan.order.begin(), plan.order.end(), [&](int64_t a, int64_t b) {
    return std::make_pair(plan.target[a], plan.source[a]) < std::make_pair(plan.target[b], plan.source[b]);
  });

  std::vector<Batch> split;
  for (const auto& [start, end] : least_costly_cut(plan, parts)) {
    const std::vector<int64_t> rows(plan.order.begin() + static_cast<std::ptrdiff_t>(start),
                                    plan.order.begin() + static_cast<std::ptrdiff_t>(end));
    const auto index = torch::tensor(rows, torch::kLong).to(batch.source.device());
    Batch part;
    part.source = trim_padding(batch.source.index_select(0, index));
    part.target_out = trim_padding(batch.target_out.index_select(0, index));
    part.target_in = batch.target_in.index_select(0, index).narrow(1, 0, part.target_out.size(1)).contiguous();
    part.source_tokens = real_tokens(part.source);
    part.target_tokens = real_tokens(part.target_out);
    for (const int64_t row : rows) {
      if (row < static_cast<int64_t>(batch.indices.size())) part.indices.push_back(batch.indices[row]);
    }
    split.push_back(std::move(part));
  }
  return split;
}

}  // namespace tfm
