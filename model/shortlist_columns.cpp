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
  candidates = candidates.index_select(0, index);
  rest_mean = rest_mean.index_select(0, index);
  rest_log_count = rest_log_count.index_select(0, index);
}

void ShortlistColumns::append(const ShortlistColumns& other) {
  const int64_t width = std::max(candidates.size(1), other.candidates.size(1));
  candidates = torch::cat({padded(candidates, width), padded(other.candidates, width)});
  rest_mean = torch::cat({rest_mean, other.rest_mean});
  rest_log_count = torch::cat({rest_log_count, other.rest_log_count});
}

ShortlistColumns shortlist_columns(const torch::Tensor& matrix, const torch::Tensor& candidates,
                                   const RowMoments& moments, double rest_correction) {
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
  return {lists,
          means.to(matrix.scalar_type()),
          (left.squeeze(1).log() + rest_correction).to(torch::kFloat32),  // -inf stays -inf
          {spread.basis.to(torch::kCPU, matrix.scalar_type()), spread.excess, spread.residual}};
}

}  // namespace tfm
