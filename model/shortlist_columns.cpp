#include "model/shortlist_columns.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "runtime/vector_clones.h"

namespace tfm {
namespace {

/// spread_rank's unit: the shortlist kernel reads the projections 16 lanes at a time.
constexpr int64_t kSpreadBlock = 16;

/// [M, C] padded with -1 to `width` columns.
torch::Tensor padded(const torch::Tensor& lists, int64_t width) {
  if (lists.size(1) == width) return lists;
  return torch::cat({lists, torch::full({lists.size(0), width - lists.size(1)}, -1, lists.options())}, 1);
}

/// sum[d] += row[d] in float64 over `dim`: compiled for AVX-512 and AVX2 as well (lane by lane,
/// the same sums on every CPU), as a batch's lists add up a few hundred rows each.
template <typename T>
TFM_VECTOR_CLONES void add_row(const T* row, int64_t dim, double* sum) {
  for (int64_t d = 0; d < dim; ++d) sum[d] += static_cast<double>(row[d]);
}

/// Per list: the sum of its candidates' rows ([M, D] float64) and how many it has.
template <typename T>
void sum_listed_rows(const T* matrix, int64_t vocab, int64_t dim, const int64_t* ids, int64_t lists, int64_t width,
                     double* sums, int64_t* counts) {
  team_parallel_for(0, lists, 1, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      double* sum = sums + m * dim;
      std::fill(sum, sum + dim, 0.0);
      counts[m] = 0;
      for (int64_t c = 0; c < width; ++c) {
        const int64_t id = ids[m * width + c];
        if (id < 0) continue;
        TORCH_CHECK(id < vocab, "shortlist_columns: token ", id, " outside a vocabulary of ", vocab);
        ++counts[m];
        add_row(matrix + id * dim, dim, sum);
      }
    }
  });
}

/// columns.own_* and columns.shared_* for its candidates and columns.shared.
void split_columns(ShortlistColumns& columns) {
  const auto& lists = columns.candidates;  // [M, C]
  const int64_t count = lists.size(0), width = lists.size(1);
  const int64_t* ids = lists.data_ptr<int64_t>();
  const int64_t* places = columns.shared->places.data_ptr<int64_t>();
  std::vector<int64_t> own_count(static_cast<size_t>(count)), shared_count(static_cast<size_t>(count));
  for (int64_t m = 0; m < count; ++m) {
    for (int64_t c = 0; c < width; ++c) {
      const int64_t id = ids[m * width + c];
      ++(id >= 0 && places[id] < 0 ? own_count : shared_count)[m];
    }
  }
  const auto widest = [](const std::vector<int64_t>& counts) {
    return std::max<int64_t>(1, *std::max_element(counts.begin(), counts.end()));
  };
  const int64_t own_width = widest(own_count), shared_width = widest(shared_count);
  columns.own_ids = torch::full({count, own_width}, -1, torch::kLong);
  columns.own_columns = torch::full({count, own_width}, -1, torch::kLong);
  columns.shared_columns = torch::full({count, shared_width}, -1, torch::kLong);
  columns.shared_places = torch::full({count, shared_width}, -1, torch::kLong);
  auto* own_ids = columns.own_ids.data_ptr<int64_t>();
  auto* own_columns = columns.own_columns.data_ptr<int64_t>();
  auto* shared_columns = columns.shared_columns.data_ptr<int64_t>();
  auto* shared_places = columns.shared_places.data_ptr<int64_t>();
  for (int64_t m = 0; m < count; ++m) {
    int64_t own = m * own_width, shared = m * shared_width;
    for (int64_t c = 0; c < width; ++c) {
      const int64_t id = ids[m * width + c];
      if (id >= 0 && places[id] < 0) {
        own_ids[own] = id;
        own_columns[own++] = c;
      } else {
        shared_columns[shared] = c;
        shared_places[shared++] = id >= 0 ? places[id] : -1;
      }
    }
  }
}

}  // namespace

int64_t spread_rank(int64_t dim) {
  const int64_t blocks = (dim / 8 + kSpreadBlock - 1) / kSpreadBlock;
  return std::min(dim, std::max<int64_t>(1, blocks) * kSpreadBlock);
}

RowMoments row_moments(const torch::Tensor& matrix) {
  torch::NoGradGuard no_grad;
  // In float64 a block of rows at a time: the whole matrix in float64, and its centred copy, would
  // each take twice its float32 bytes (125 MiB at 32,000 x 512) at a translator's start.
  constexpr int64_t kBlockRows = 1024;
  const auto source = matrix.detach();
  const int64_t vocab = source.size(0), dim = source.size(1), rank = spread_rank(dim);
  const auto block = [&](int64_t first) {  // [<= kBlockRows, D] float64
    return source.slice(0, first, std::min(vocab, first + kBlockRows)).to(torch::kCPU, torch::kDouble);
  };
  auto sum = torch::zeros({dim}, torch::kDouble);
  for (int64_t first = 0; first < vocab; first += kBlockRows) sum += block(first).sum(0);
  const auto mean = sum / static_cast<double>(vocab);  // [D]
  auto covariance = torch::zeros({dim, dim}, torch::kDouble);
  for (int64_t first = 0; first < vocab; first += kBlockRows) {
    const auto centered = block(first) - mean;
    covariance.addmm_(centered.t(), centered);
  }
  covariance /= static_cast<double>(vocab);                 // [D, D]
  auto [values, vectors] = torch::linalg_eigh(covariance);  // ascending
  values = values.flip(0).clamp_min(0.0);
  vectors = vectors.flip(1);
  const double residual = rank < dim ? values.slice(0, rank).mean().item<double>() : 0.0;
  return {sum,
          {vectors.slice(1, 0, rank).to(torch::kFloat32).contiguous(),
           (values.slice(0, 0, rank) - residual).to(torch::kFloat32), residual}};
}

void ShortlistColumns::select(const torch::Tensor& lists) {
  const auto index = lists.to(torch::kCPU, torch::kLong);
  for (auto* part :
       {&candidates, &rest_mean, &rest_log_count, &own_ids, &own_columns, &shared_columns, &shared_places}) {
    if (part->defined()) *part = part->index_select(0, index);
  }
}

void ShortlistColumns::append(const ShortlistColumns& other) {
  if (shared != other.shared) {  // laid out for other ids or another matrix: every column list by list
    shared = nullptr;
    own_ids = own_columns = shared_columns = shared_places = torch::Tensor();
  }
  const auto join = [](torch::Tensor& mine, const torch::Tensor& theirs) {
    const int64_t width = std::max(mine.size(1), theirs.size(1));
    mine = torch::cat({padded(mine, width), padded(theirs, width)});
  };
  join(candidates, other.candidates);
  if (shared) {
    for (auto [mine, theirs] : {std::pair{&own_ids, &other.own_ids},
                                {&own_columns, &other.own_columns},
                                {&shared_columns, &other.shared_columns},
                                {&shared_places, &other.shared_places}}) {
      join(*mine, *theirs);
    }
  }
  rest_mean = torch::cat({rest_mean, other.rest_mean});
  rest_log_count = torch::cat({rest_log_count, other.rest_log_count});
}

ShortlistColumns shortlist_columns(const torch::Tensor& matrix, const torch::Tensor& candidates,
                                   const RowMoments& moments, double rest_correction,
                                   std::shared_ptr<const SharedCandidates> shared) {
  TORCH_CHECK(matrix.dim() == 2 && candidates.dim() == 2, "shortlist_columns: a [V, D] matrix and [M, C] lists");
  TORCH_CHECK(moments.sum.numel() == matrix.size(1), "shortlist_columns: moments of another matrix");
  torch::NoGradGuard no_grad;
  const auto lists = candidates.to(torch::kCPU, torch::kLong).contiguous();
  const auto rows = matrix.detach().to(torch::kCPU).contiguous();  // [V, D], in its own dtype
  const int64_t vocab = rows.size(0), dim = rows.size(1), count = lists.size(0), width = lists.size(1);
  auto sums = torch::empty({count, dim}, torch::kDouble);
  std::vector<int64_t> listed(static_cast<size_t>(count));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, rows.scalar_type(), "shortlist_columns", [&] {
    sum_listed_rows(rows.data_ptr<scalar_t>(), vocab, dim, lists.data_ptr<int64_t>(), count, width,
                    sums.data_ptr<double>(), listed.data());
  });
  auto left = torch::empty({count, 1}, torch::kDouble);
  for (int64_t m = 0; m < count; ++m) left.data_ptr<double>()[m] = static_cast<double>(vocab - listed[m]);
  // No token left out: a mean of 0 and a count of 0, whose log -inf removes the column's mass.
  const auto means = (moments.sum.unsqueeze(0) - sums) / left.clamp_min(1.0);  // [M, D]
  const auto& spread = moments.spread;
  ShortlistColumns columns;
  columns.candidates = lists;
  columns.rest_mean = means.to(matrix.scalar_type());
  columns.rest_log_count = (left.squeeze(1).log() + rest_correction).to(torch::kFloat32);  // -inf stays -inf
  columns.spread = {spread.basis.to(torch::kCPU, matrix.scalar_type()), spread.excess, spread.residual};
  if (shared) {
    TORCH_CHECK(shared->places.numel() == vocab && shared->dim == dim,
                "shortlist_columns: shared candidates of another matrix");
    columns.shared = std::move(shared);
    split_columns(columns);
  }
  return columns;
}

}  // namespace tfm
