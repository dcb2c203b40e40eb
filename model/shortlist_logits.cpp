#include "model/shortlist_logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <typename T>
struct ShortlistViews {
  const T* hidden;              // [N, D]
  const T* matrix;              // [V, D]
  const int64_t* candidates;    // [M, C]
  const T* rest_mean;           // [M, D]
  const float* rest_log_count;  // [M]
  const T* spread_rows;         // [N, D]: hidden x spread
  float* out;                   // [N, C + 1]
  int64_t width, dim, rows_per_list;
};

/// products[j] += x's 16-lane products with columns[j], over `dim` (a multiple of 16).
template <typename Lanes>
TFM_ALWAYS_INLINE void add_products(const float* x, const float* const* columns, int64_t dim,
                                    Lanes (&products)[kVectorLanes]) {
  for (int64_t d = 0; d < dim; d += kVectorLanes) {
    const Lanes xs = load_lanes<Lanes>(x + d);
    for (int64_t j = 0; j < kVectorLanes; ++j) products[j] += xs * load_lanes<Lanes>(columns[j] + d);
  }
}
/// bfloat16: 32 elements at a time as even and odd halves (load_bfloat16_pairs).
template <typename Lanes>
TFM_ALWAYS_INLINE void add_products(const c10::BFloat16* x, const c10::BFloat16* const* columns, int64_t dim,
                                    Lanes (&products)[kVectorLanes]) {
  int64_t d = 0;
  for (; d + 2 * kVectorLanes <= dim; d += 2 * kVectorLanes) {
    Lanes x_even, x_odd;
    load_bfloat16_pairs(x + d, x_even, x_odd);
    for (int64_t j = 0; j < kVectorLanes; ++j) {
      Lanes even, odd;
      load_bfloat16_pairs(columns[j] + d, even, odd);
      products[j] += x_even * even;
      products[j] += x_odd * odd;
    }
  }
  for (; d < dim; d += kVectorLanes) {
    const Lanes xs = load_lanes<Lanes>(x + d);
    for (int64_t j = 0; j < kVectorLanes; ++j) products[j] += xs * load_lanes<Lanes>(columns[j] + d);
  }
}

/// Rows [begin, end): the rows of one list take each block of 16 candidates in turn, so that the
/// block's matrix rows are read from memory once and from the cache by the list's other rows.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void score_rows(const ShortlistViews<T>& a, int64_t begin, int64_t end) {
  for (int64_t first = begin; first < end;) {
    const int64_t list = first / a.rows_per_list;
    const int64_t last = std::min(end, (list + 1) * a.rows_per_list);
    const int64_t* ids = a.candidates + list * a.width;
    for (int64_t block = 0; block < a.width; block += kVectorLanes) {
      const int64_t count = std::min(kVectorLanes, a.width - block);
      const T* columns[kVectorLanes];
      for (int64_t j = 0; j < kVectorLanes; ++j) {
        const int64_t id = j < count ? ids[block + j] : -1;
        columns[j] = a.matrix + std::max<int64_t>(id, 0) * a.dim;  // padding reads row 0, then drops it
      }
      for (int64_t row = first; row < last; ++row) {
        Lanes products[kVectorLanes] = {};
        add_products(a.hidden + row * a.dim, columns, a.dim, products);
        float sums[kVectorLanes];
        store_lanes(sums, sums_of_lanes(products));
        float* out = a.out + row * (a.width + 1) + block;
        for (int64_t j = 0; j < count; ++j) out[j] = ids[block + j] >= 0 ? sums[j] : kNegInf;
      }
    }
    // log(count) + h . mean + h^T spread h / 2 = log(count) + h . (mean + (h spread) / 2)
    const T* rest = a.rest_mean + list * a.dim;
    for (int64_t row = first; row < last; ++row) {
      const T* x = a.hidden + row * a.dim;
      const T* spread = a.spread_rows + row * a.dim;
      Lanes sum{};
      for (int64_t d = 0; d < a.dim; d += kVectorLanes) {
        sum += load_lanes<Lanes>(x + d) * (load_lanes<Lanes>(rest + d) + 0.5F * load_lanes<Lanes>(spread + d));
      }
      a.out[row * (a.width + 1) + a.width] = a.rest_log_count[list] + sum_of_lanes(sum);
    }
    first = last;
  }
}

using BFloat16 = c10::BFloat16;
TFM_LANE_KERNEL((void score_range(const ShortlistViews<float>& a, int64_t begin, int64_t end)),
                score_rows<Lanes>(a, begin, end);)
TFM_LANE_KERNEL((void score_range(const ShortlistViews<BFloat16>& a, int64_t begin, int64_t end)),
                score_rows<Lanes>(a, begin, end);)

template <typename T>
void score_all(const torch::Tensor& hidden, const torch::Tensor& matrix, const ShortlistColumns& columns,
               const torch::Tensor& spread_rows, int64_t rows_per_list, torch::Tensor& out) {
  const ShortlistViews<T> a{hidden.data_ptr<T>(),
                            matrix.data_ptr<T>(),
                            columns.candidates.data_ptr<int64_t>(),
                            columns.rest_mean.data_ptr<T>(),
                            columns.rest_log_count.data_ptr<float>(),
                            spread_rows.data_ptr<T>(),
                            out.data_ptr<float>(),
                            columns.candidates.size(1),
                            hidden.size(1),
                            rows_per_list};
  // Enough multiply-adds per task that a thread's share outweighs waking it.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, a.width * a.dim));
  at::parallel_for(0, hidden.size(0), grain, [&](int64_t begin, int64_t end) { score_range(a, begin, end); });
}

bool kernel_supported(const torch::Tensor& hidden, const torch::Tensor& matrix, const ShortlistColumns& columns) {
  const auto dtype = hidden.scalar_type();
  return hidden.is_cpu() && matrix.is_cpu() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         matrix.scalar_type() == dtype && columns.rest_mean.scalar_type() == dtype &&
         columns.spread.scalar_type() == dtype && hidden.size(1) % kVectorLanes == 0 && !hidden.requires_grad();
}

/// [M, C] padded with -1 to `width` columns.
torch::Tensor padded(const torch::Tensor& lists, int64_t width) {
  if (lists.size(1) == width) return lists;
  return torch::cat({lists, torch::full({lists.size(0), width - lists.size(1)}, -1, lists.options())}, 1);
}

/// shortlist_logits() once its arguments are checked.
torch::Tensor checked_logits(const torch::Tensor& hidden, const torch::Tensor& matrix, const ShortlistColumns& columns,
                             int64_t rows_per_list) {
  const auto& candidates = columns.candidates;
  const int64_t width = candidates.size(1);
  if (kernel_supported(hidden, matrix, columns)) {
    const auto rows = hidden.contiguous();
    const auto spread_rows = rows.mm(columns.spread).contiguous();  // [N, D]
    const ShortlistColumns lists{candidates.contiguous(), columns.rest_mean.contiguous(),
                                 columns.rest_log_count.to(torch::kFloat32).contiguous(), columns.spread};
    auto out = torch::empty({rows.size(0), width + 1}, rows.options().dtype(torch::kFloat32));
    if (rows.scalar_type() == torch::kFloat32) {
      score_all<float>(rows, matrix.contiguous(), lists, spread_rows, rows_per_list, out);
    } else {
      score_all<BFloat16>(rows, matrix.contiguous(), lists, spread_rows, rows_per_list, out);
    }
    return out;
  }
  const auto device = hidden.device();
  const auto per_row = candidates.repeat_interleave(rows_per_list, 0).to(device);  // [N, C]
  const auto all = torch::matmul(hidden, matrix.t()).to(torch::kFloat32);          // [N, V]
  const auto listed = all.gather(1, per_row.clamp_min(0)).masked_fill(per_row.lt(0), kNegInf);
  const auto h = hidden.to(torch::kFloat32);
  const auto means = columns.rest_mean.to(device, torch::kFloat32).repeat_interleave(rows_per_list, 0);
  const auto spread_rows = h.mm(columns.spread.to(device, torch::kFloat32));
  const auto rest = (h * (means + 0.5 * spread_rows)).sum(1) +
                    columns.rest_log_count.to(device, torch::kFloat32).repeat_interleave(rows_per_list, 0);
  return torch::cat({listed, rest.unsqueeze(1)}, 1);  // [N, C + 1]
}

}  // namespace

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

torch::Tensor row_covariance(const torch::Tensor& matrix) {
  torch::NoGradGuard no_grad;
  const auto rows = matrix.detach().to(torch::kCPU, torch::kDouble);  // [V, D]
  const auto centered = rows - rows.mean(0, /*keepdim=*/true);
  return (centered.t().mm(centered) / static_cast<double>(rows.size(0))).to(torch::kFloat32);
}

ShortlistColumns shortlist_columns(const torch::Tensor& matrix, const torch::Tensor& candidates,
                                   const torch::Tensor& spread) {
  TORCH_CHECK(matrix.dim() == 2 && candidates.dim() == 2, "shortlist_columns: a [V, D] matrix and [M, C] lists");
  torch::NoGradGuard no_grad;
  const auto lists = candidates.to(torch::kCPU, torch::kLong).contiguous();
  const auto rows = matrix.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // [V, D]
  const int64_t vocab = rows.size(0), dim = rows.size(1), count = lists.size(0), width = lists.size(1);
  const auto total = rows.sum(0, /*keepdim=*/false, torch::kDouble);  // [D]
  auto means = torch::empty({count, dim}, torch::kDouble);
  auto log_counts = torch::empty({count}, torch::kFloat32);
  const float* matrix_rows = rows.data_ptr<float>();
  const int64_t* ids = lists.data_ptr<int64_t>();
  at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> kept(static_cast<size_t>(dim));
    for (int64_t m = begin; m < end; ++m) {
      std::fill(kept.begin(), kept.end(), 0.0);
      int64_t listed = 0;
      for (int64_t c = 0; c < width; ++c) {
        const int64_t id = ids[m * width + c];
        if (id < 0) continue;
        TORCH_CHECK(id < vocab, "shortlist_columns: token ", id, " outside a vocabulary of ", vocab);
        ++listed;
        for (int64_t d = 0; d < dim; ++d) kept[d] += matrix_rows[id * dim + d];
      }
      const int64_t left = vocab - listed;
      double* mean = means.data_ptr<double>() + m * dim;
      const double* sum = total.data_ptr<double>();
      for (int64_t d = 0; d < dim; ++d) mean[d] = left > 0 ? (sum[d] - kept[d]) / static_cast<double>(left) : 0.0;
      log_counts.data_ptr<float>()[m] = left > 0 ? std::log(static_cast<float>(left)) : kNegInf;
    }
  });
  return {lists, means.to(matrix.scalar_type()), log_counts, spread.to(torch::kCPU, matrix.scalar_type())};
}

torch::Tensor shortlist_logits(const torch::Tensor& hidden, const torch::Tensor& matrix,
                               const ShortlistColumns& columns, int64_t rows_per_list) {
  const auto& candidates = columns.candidates;
  TORCH_CHECK(hidden.dim() == 2 && matrix.dim() == 2 && hidden.size(1) == matrix.size(1), "shortlist_logits: hidden ",
              hidden.sizes(), " does not match the output matrix ", matrix.sizes());
  TORCH_CHECK(candidates.dim() == 2 && candidates.is_cpu() && candidates.scalar_type() == torch::kLong,
              "shortlist_logits: candidates must be [M, C] int64 on the CPU");
  TORCH_CHECK(columns.rest_mean.dim() == 2 && columns.rest_mean.size(0) == candidates.size(0) &&
                  columns.rest_mean.size(1) == hidden.size(1) && columns.rest_log_count.numel() == candidates.size(0),
              "shortlist_logits: the left-out tokens' means do not match the lists");
  TORCH_CHECK(rows_per_list >= 1 && hidden.size(0) == candidates.size(0) * rows_per_list,
              "shortlist_logits: ", hidden.size(0), " rows for ", candidates.size(0), " lists of ", rows_per_list);
  TORCH_CHECK(
      columns.spread.dim() == 2 && columns.spread.size(0) == hidden.size(1) && columns.spread.size(1) == hidden.size(1),
      "shortlist_logits: the spread of the matrix's rows is not [D, D]");
  return checked_logits(hidden, matrix, columns, rows_per_list);
}

}  // namespace tfm
