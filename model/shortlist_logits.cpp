#include "model/shortlist_logits.h"

#include <algorithm>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

/// products[j] += x . columns[j] in the lanes' float arithmetic: every CPU.
struct LaneProducts {
  template <typename T, typename Lanes>
  static TFM_ALWAYS_INLINE void add(const T* x, const T* const* columns, int64_t dim, Lanes (&products)[kVectorLanes]) {
    add_products(x, columns, dim, products);
  }
};

/// Rows [begin, end): the rows of one list take each block of 16 candidates in turn, so that the
/// block's matrix rows are read from memory once and from the cache by the list's other rows.
template <typename Lanes, typename T, typename Products = LaneProducts>
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
        Products::add(a.hidden + row * a.dim, columns, a.dim, products);
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

// TFM_ONE_CLONE builds (bench/vector_clones.sh) measure the lane versions alone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TFM_ONE_CLONE)
// AVX512-BF16's dot product instruction does 32 bfloat16 multiply-adds into 16 float lanes, where
// widening both halves of a pair of rows and multiplying them takes four instructions: this loop
// is bound by its instructions, as each candidate's row serves only one sentence's hypotheses.
#define TFM_BF16_DOT_TARGET __attribute__((target("arch=x86-64-v4,avx512bf16")))
struct BFloat16DotProducts {
  /// dim: a multiple of 32.
  TFM_BF16_DOT_TARGET static void add(const BFloat16* x, const BFloat16* const* columns, int64_t dim,
                                      WideLanes (&products)[kVectorLanes]) {
    for (int64_t d = 0; d < dim; d += 2 * kVectorLanes) {
      const auto xs = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + d));
      for (int64_t j = 0; j < kVectorLanes; ++j) {
        const auto column = reinterpret_cast<__m512bh>(_mm512_loadu_si512(columns[j] + d));
        products[j].v =
            reinterpret_cast<FloatWhole>(_mm512_dpbf16_ps(reinterpret_cast<__m512>(products[j].v), xs, column));
      }
    }
  }
};
TFM_BF16_DOT_TARGET void score_range_bf16_dot(const ShortlistViews<BFloat16>& a, int64_t begin, int64_t end) {
  score_rows<WideLanes, BFloat16, BFloat16DotProducts>(a, begin, end);
}
#endif

/// score_range, or the dot product instruction's version where the CPU has it.
void best_score_range(const ShortlistViews<float>& a, int64_t begin, int64_t end) { score_range(a, begin, end); }
void best_score_range(const ShortlistViews<BFloat16>& a, int64_t begin, int64_t end) {
#ifdef TFM_BF16_DOT_TARGET
  static const bool cpu_has_it = __builtin_cpu_supports("avx512bf16");
  if (cpu_has_it && a.dim % (2 * kVectorLanes) == 0) return score_range_bf16_dot(a, begin, end);
#endif
  score_range(a, begin, end);
}

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
  at::parallel_for(0, hidden.size(0), grain, [&](int64_t begin, int64_t end) { best_score_range(a, begin, end); });
}

bool kernel_supported(const torch::Tensor& hidden, const torch::Tensor& matrix, const ShortlistColumns& columns) {
  const auto dtype = hidden.scalar_type();
  return hidden.is_cpu() && matrix.is_cpu() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         matrix.scalar_type() == dtype && columns.rest_mean.scalar_type() == dtype &&
         columns.spread.scalar_type() == dtype && hidden.size(1) % kVectorLanes == 0 && !hidden.requires_grad();
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
