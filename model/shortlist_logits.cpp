#include "model/shortlist_logits.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/shortlist_int8.h"
#include "model/shortlist_shared.h"
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
  const T* projections;         // [N, r]: hidden x the spread's basis
  const float* excess;          // [r]
  float residual;
  int64_t rank;
  float* listed;  // [N, C]
  float* rest;    // [N]
  int64_t width, dim, rows_per_list;
  // Where shared candidates are scored apart (ShortlistColumns::shared): [M, Co] the others' ids
  // and columns, then -1. Null: every column of `candidates`.
  const int64_t* own_ids = nullptr;
  const int64_t* own_columns = nullptr;
  int64_t own_width = 0;
};

/// A tile of Rows queries by kTileColumns<Rows> candidates fills the 16 accumulators that one
/// sums_of_lanes reduces, so that each load of a query or of a candidate's row serves several
/// products, not one: a sentence's K hypotheses are scored together.
template <int Rows>
constexpr int kTileColumns = kVectorLanes / Rows;

/// products[r * kTileColumns<Rows> + c] += xs[r] . columns[c] over [from, dim) in 16-lane steps
/// (dim - from a multiple of 16): each product's lanes add in the same order whatever the tile's
/// shape.
template <int Rows, typename T, typename Lanes>
TFM_ALWAYS_INLINE void add_tile_lanes(const T* const* xs, const T* const* columns, int64_t from, int64_t dim,
                                      Lanes (&products)[kVectorLanes]) {
  constexpr int kColumns = kTileColumns<Rows>;
  for (int64_t d = from; d < dim; d += kVectorLanes) {
    Lanes x[Rows];
    for (int r = 0; r < Rows; ++r) x[r] = load_lanes<Lanes>(xs[r] + d);
    for (int c = 0; c < kColumns; ++c) {
      const Lanes column = load_lanes<Lanes>(columns[c] + d);
      for (int r = 0; r < Rows; ++r) products[r * kColumns + c] += x[r] * column;
    }
  }
}
template <int Rows, typename Lanes>
TFM_ALWAYS_INLINE void add_tile(const float* const* xs, const float* const* columns, int64_t dim,
                                Lanes (&products)[kVectorLanes]) {
  add_tile_lanes<Rows>(xs, columns, 0, dim, products);
}
/// bfloat16: 32 elements at a time as even and odd halves (load_bfloat16_pairs), then 16.
template <int Rows, typename Lanes>
TFM_ALWAYS_INLINE void add_tile(const c10::BFloat16* const* xs, const c10::BFloat16* const* columns, int64_t dim,
                                Lanes (&products)[kVectorLanes]) {
  constexpr int kColumns = kTileColumns<Rows>;
  int64_t d = 0;
  for (; d + 2 * kVectorLanes <= dim; d += 2 * kVectorLanes) {
    Lanes x_even[Rows], x_odd[Rows];
    for (int r = 0; r < Rows; ++r) load_bfloat16_pairs(xs[r] + d, x_even[r], x_odd[r]);
    for (int c = 0; c < kColumns; ++c) {
      Lanes even, odd;
      load_bfloat16_pairs(columns[c] + d, even, odd);
      for (int r = 0; r < Rows; ++r) {
        products[r * kColumns + c] += x_even[r] * even;
        products[r * kColumns + c] += x_odd[r] * odd;
      }
    }
  }
  add_tile_lanes<Rows>(xs, columns, d, dim, products);
}

/// The CPU vectors that lanes are made of where a register holds fewer than 16 floats: AVX2's
/// two halves, SSE's four quarters.
template <typename Lanes>
struct LaneParts;
template <>
struct LaneParts<SplitLanes> {
  using Part = FloatHalf;
  static constexpr int kCount = 2;
  static TFM_ALWAYS_INLINE Part& at(SplitLanes& lanes, int part) { return part == 0 ? lanes.lo : lanes.hi; }
};
template <>
struct LaneParts<QuarterLanes> {
  using Part = FloatQuarter;
  static constexpr int kCount = 4;
  static TFM_ALWAYS_INLINE Part& at(QuarterLanes& lanes, int part) { return lanes.q[part]; }
};

/// A tile's products (add_tile from zero) in float where lanes take several registers. A tile's 16
/// products fill 32 AVX2 registers (64 SSE ones) of the 16 there are, so the compiler kept them on
/// the stack and stored and reloaded each at every step. Here each pass sums one part of the lanes
/// of 8 products (a register each) over the whole row: the same additions per lane in the same
/// order, so the same bits as add_tile.
template <int Rows, typename Lanes>
TFM_ALWAYS_INLINE void tile_by_parts(const float* const* xs, const float* const* columns, int64_t dim,
                                     Lanes (&products)[kVectorLanes]) {
  using Parts = LaneParts<Lanes>;
  using Part = typename Parts::Part;
  constexpr int kColumns = kTileColumns<Rows>;
  constexpr int kGroup = 8 / Rows;                      // columns per pass: Rows x kGroup sums
  constexpr int kWidth = kVectorLanes / Parts::kCount;  // floats per part
  for (int first = 0; first < kColumns; first += kGroup) {
    for (int part = 0; part < Parts::kCount; ++part) {
      Part sums[Rows][kGroup] = {};
      for (int64_t d = part * kWidth; d < dim; d += kVectorLanes) {
        Part x[Rows];
        for (int r = 0; r < Rows; ++r) x[r] = load_floats<Part>(xs[r] + d);
        for (int c = 0; c < kGroup; ++c) {
          const Part column = load_floats<Part>(columns[first + c] + d);
          for (int r = 0; r < Rows; ++r) sums[r][c] += x[r] * column;
        }
      }
      for (int r = 0; r < Rows; ++r) {
        for (int c = 0; c < kGroup; ++c) Parts::at(products[r * kColumns + first + c], part) = sums[r][c];
      }
    }
  }
}

/// A tile's products in the lanes' float arithmetic: every CPU. A policy's tile() sets all 16.
struct LaneProducts {
  template <int Rows, typename T, typename Lanes>
  static TFM_ALWAYS_INLINE void tile(const T* const* xs, const T* const* columns, int64_t dim,
                                     Lanes (&products)[kVectorLanes]) {
    if constexpr (std::is_same_v<T, float> && !std::is_same_v<Lanes, WideLanes>) {
      tile_by_parts<Rows>(xs, columns, dim, products);  // not zeroed first: 1 KB of stores for nothing
    } else {
      for (auto& product : products) product = Lanes{};
      add_tile<Rows>(xs, columns, dim, products);
    }
  }
};

/// How many tiles ahead score_tiles asks for candidates' rows: a list's rows lie scattered over an
/// output matrix larger than a core's caches, where the CPU's own prefetchers do not follow.
constexpr int64_t kPrefetchTiles = 2;

/// Rows [row, row + Rows) of one list against its candidates `ids` ([width]), a tile at a time:
/// the products of ids[c] go to column c, or with `to` to column to[c] (where ids has ended, -1:
/// the rest of the list is left alone).
template <int Rows, typename Lanes, typename T, typename Products>
TFM_ALWAYS_INLINE void score_tiles(const ShortlistViews<T>& a, int64_t row, const int64_t* ids, int64_t width,
                                   const int64_t* to) {
  constexpr int kColumns = kTileColumns<Rows>;
  const T* xs[Rows];
  for (int r = 0; r < Rows; ++r) xs[r] = a.hidden + (row + r) * a.dim;
  for (int64_t block = 0; block < width; block += kColumns) {
    if (to != nullptr && ids[block] < 0) break;
    const int64_t ahead = block + kPrefetchTiles * kColumns;
    for (int64_t c = ahead; c < std::min<int64_t>(ahead + kColumns, width) && ids[c] >= 0; ++c) {
      prefetch_bytes(a.matrix + ids[c] * a.dim, a.dim * static_cast<int64_t>(sizeof(T)));
    }
    const int64_t count = std::min<int64_t>(kColumns, width - block);
    const T* columns[kColumns];
    for (int64_t c = 0; c < kColumns; ++c) {
      const int64_t id = c < count ? ids[block + c] : -1;
      columns[c] = a.matrix + std::max<int64_t>(id, 0) * a.dim;  // padding reads row 0, then drops it
    }
    Lanes products[kVectorLanes];
    Products::template tile<Rows>(xs, columns, a.dim, products);
    float sums[kVectorLanes];
    store_lanes(sums, sums_of_lanes(products));
    for (int r = 0; r < Rows; ++r) {
      float* out = a.listed + (row + r) * a.width;
      if (to == nullptr) {
        for (int64_t c = 0; c < count; ++c) out[block + c] = ids[block + c] >= 0 ? sums[r * kColumns + c] : kNegInf;
      } else {
        for (int64_t c = 0; c < count && to[block + c] >= 0; ++c) out[to[block + c]] = sums[r * kColumns + c];
      }
    }
  }
}

/// Rows [begin, end) of the left-out tokens' column: log(count) + h . mean + h^T spread h / 2, the
/// spread in its low-rank form (RowSpread).
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void score_rest(const ShortlistViews<T>& a, int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    const int64_t list = row / a.rows_per_list;
    const T* x = a.hidden + row * a.dim;
    const T* rest = a.rest_mean + list * a.dim;
    Lanes along_mean{}, squares{};
    for (int64_t d = 0; d < a.dim; d += kVectorLanes) {
      const Lanes xs = load_lanes<Lanes>(x + d);
      along_mean += xs * load_lanes<Lanes>(rest + d);
      squares += xs * xs;
    }
    const T* p = a.projections + row * a.rank;
    Lanes leading{};
    for (int64_t i = 0; i < a.rank; i += kVectorLanes) {
      const Lanes ps = load_lanes<Lanes>(p + i);
      leading += load_lanes<Lanes>(a.excess + i) * ps * ps;
    }
    const float spread = sum_of_lanes(leading) + a.residual * sum_of_lanes(squares);
    a.rest[row] = a.rest_log_count[list] + sum_of_lanes(along_mean) + 0.5F * spread;
  }
}

/// Rows [begin, end), a list's rows four at a time (a beam of 4 in one tile), then two, then one;
/// and their left-out tokens' column.
template <typename Lanes, typename T, typename Products = LaneProducts>
TFM_ALWAYS_INLINE void score_rows(const ShortlistViews<T>& a, int64_t begin, int64_t end) {
  for (int64_t first = begin; first < end;) {
    const int64_t list = first / a.rows_per_list;
    const int64_t last = std::min(end, (list + 1) * a.rows_per_list);
    const bool own = a.own_ids != nullptr;
    const int64_t width = own ? a.own_width : a.width;
    const int64_t* ids = own ? a.own_ids + list * width : a.candidates + list * width;
    const int64_t* to = own ? a.own_columns + list * width : nullptr;
    int64_t row = first;
    for (; row + 4 <= last; row += 4) score_tiles<4, Lanes, T, Products>(a, row, ids, width, to);
    for (; row + 2 <= last; row += 2) score_tiles<2, Lanes, T, Products>(a, row, ids, width, to);
    for (; row < last; ++row) score_tiles<1, Lanes, T, Products>(a, row, ids, width, to);
    score_rest<Lanes>(a, first, last);
    first = last;
  }
}

using BFloat16 = c10::BFloat16;
TFM_LANE_KERNEL((void score_range(const ShortlistViews<float>& a, int64_t begin, int64_t end)),
                score_rows<Lanes>(a, begin, end);)
TFM_LANE_KERNEL((void score_range(const ShortlistViews<BFloat16>& a, int64_t begin, int64_t end)),
                score_rows<Lanes>(a, begin, end);)
TFM_LANE_KERNEL((void rest_range(const ShortlistViews<float>& a, int64_t begin, int64_t end)),
                score_rest<Lanes>(a, begin, end);)

#ifdef TFM_EXTENSION_KERNELS
// AVX512-BF16's dot product instruction does 32 bfloat16 multiply-adds into 16 float lanes, where
// widening both halves of a pair of rows and multiplying them takes four instructions.
struct BFloat16DotProducts {
  /// dim: a multiple of 32.
  template <int Rows>
  TFM_BF16_DOT_TARGET static void tile(const BFloat16* const* xs, const BFloat16* const* columns, int64_t dim,
                                       WideLanes (&products)[kVectorLanes]) {
    constexpr int kColumns = kTileColumns<Rows>;
    for (auto& product : products) product = WideLanes{};
    for (int64_t d = 0; d < dim; d += 2 * kVectorLanes) {
      __m512bh x[Rows];
      for (int r = 0; r < Rows; ++r) x[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(xs[r] + d));
      for (int c = 0; c < kColumns; ++c) {
        const auto column = reinterpret_cast<__m512bh>(_mm512_loadu_si512(columns[c] + d));
        for (int r = 0; r < Rows; ++r) {
          auto& sum = products[r * kColumns + c].v;
          sum = reinterpret_cast<FloatWhole>(_mm512_dpbf16_ps(reinterpret_cast<__m512>(sum), x[r], column));
        }
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
#ifdef TFM_EXTENSION_KERNELS
  static const bool cpu_has_it = __builtin_cpu_supports("avx512bf16");
  if (cpu_has_it && a.dim % (2 * kVectorLanes) == 0) return score_range_bf16_dot(a, begin, end);
#endif
  score_range(a, begin, end);
}

template <typename T>
void score_all(const torch::Tensor& hidden, const torch::Tensor& matrix, const ShortlistColumns& columns,
               const torch::Tensor& projections, int64_t rows_per_list, const Int8Rows* int8, ShortlistLogits& out) {
  ShortlistViews<T> a{hidden.data_ptr<T>(),
                      matrix.data_ptr<T>(),
                      columns.candidates.data_ptr<int64_t>(),
                      columns.rest_mean.data_ptr<T>(),
                      columns.rest_log_count.data_ptr<float>(),
                      projections.data_ptr<T>(),
                      columns.spread.excess.data_ptr<float>(),
                      static_cast<float>(columns.spread.residual),
                      projections.size(1),
                      out.listed.data_ptr<float>(),
                      out.rest.data_ptr<float>(),
                      columns.candidates.size(1),
                      hidden.size(1),
                      rows_per_list};
  if (columns.shared) {
    a.own_ids = columns.own_ids.data_ptr<int64_t>();
    a.own_columns = columns.own_columns.data_ptr<int64_t>();
    a.own_width = columns.own_ids.size(1);
  }
  // Enough multiply-adds per task that a thread's share outweighs waking it.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, a.width * a.dim));
  if constexpr (std::is_same_v<T, float>) {
    if (int8 != nullptr) {
      const Int8ListedViews b{a.hidden, int8, a.candidates, a.listed, a.width, a.dim, a.rows_per_list};
      team_parallel_for(0, hidden.size(0), grain, [&](int64_t begin, int64_t end) {
        int8_listed_rows(b, begin, end);
        rest_range(a, begin, end);
      });
      return;
    }
  }
  team_parallel_for(0, hidden.size(0), grain, [&](int64_t begin, int64_t end) { best_score_range(a, begin, end); });
  if constexpr (std::is_same_v<T, BFloat16>) {
    if (columns.shared) {
      score_shared_candidates({a.hidden, columns.shared.get(), columns.shared_columns.data_ptr<int64_t>(),
                               columns.shared_places.data_ptr<int64_t>(), columns.shared_columns.size(1), a.listed,
                               a.width, hidden.size(0), rows_per_list});
    }
  }
}

bool kernel_supported(const torch::Tensor& hidden, const torch::Tensor& matrix, const ShortlistColumns& columns) {
  const auto dtype = hidden.scalar_type();
  return hidden.is_cpu() && matrix.is_cpu() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         matrix.scalar_type() == dtype && columns.rest_mean.scalar_type() == dtype &&
         columns.spread.basis.scalar_type() == dtype && hidden.size(1) % kVectorLanes == 0 &&
         columns.spread.basis.size(1) % kVectorLanes == 0 && !hidden.requires_grad();
}

/// shortlist_logits() once its arguments are checked.
ShortlistLogits checked_logits(const torch::Tensor& hidden, const torch::Tensor& matrix,
                               const ShortlistColumns& columns, int64_t rows_per_list, const Int8Rows* int8) {
  const auto& candidates = columns.candidates;
  const int64_t width = candidates.size(1);
  if (kernel_supported(hidden, matrix, columns)) {
    const auto rows = hidden.contiguous();
    const auto projections = rows.mm(columns.spread.basis).contiguous();  // [N, r]
    const RowSpread spread{columns.spread.basis, columns.spread.excess.to(torch::kFloat32).contiguous(),
                           columns.spread.residual};
    ShortlistColumns lists = columns;  // its own and shared tables are made contiguous
    lists.candidates = candidates.contiguous();
    lists.rest_mean = columns.rest_mean.contiguous();
    lists.rest_log_count = columns.rest_log_count.to(torch::kFloat32).contiguous();
    lists.spread = spread;
    // Shared candidates on tiles where their matrix is this one in bfloat16 (shortlist_columns
    // checked its shape); otherwise every column list by list.
    if (rows.scalar_type() != torch::kBFloat16 || !shared_candidates_supported(matrix)) lists.shared = nullptr;
    const auto floats = rows.options().dtype(torch::kFloat32);
    ShortlistLogits out{torch::empty({rows.size(0), width}, floats), torch::empty({rows.size(0)}, floats)};
    if (rows.scalar_type() == torch::kFloat32) {
      const bool int8_here = int8 != nullptr && int8->defined() && int8_listed_supported(rows.size(1));
      score_all<float>(rows, matrix.contiguous(), lists, projections, rows_per_list, int8_here ? int8 : nullptr, out);
    } else {
      score_all<BFloat16>(rows, matrix.contiguous(), lists, projections, rows_per_list, nullptr, out);
    }
    return out;
  }
  const auto device = hidden.device();
  const auto per_row = candidates.repeat_interleave(rows_per_list, 0).to(device);  // [N, C]
  const auto all = torch::matmul(hidden, matrix.t()).to(torch::kFloat32);          // [N, V]
  const auto listed = all.gather(1, per_row.clamp_min(0)).masked_fill(per_row.lt(0), kNegInf);
  const auto h = hidden.to(torch::kFloat32);
  const auto means = columns.rest_mean.to(device, torch::kFloat32).repeat_interleave(rows_per_list, 0);
  const auto& spread = columns.spread;
  const auto projections = h.mm(spread.basis.to(device, torch::kFloat32));  // [N, r]
  const auto spreads =
      (projections.square() * spread.excess.to(device, torch::kFloat32)).sum(1) + spread.residual * h.square().sum(1);
  const auto rest = (h * means).sum(1) + 0.5 * spreads +
                    columns.rest_log_count.to(device, torch::kFloat32).repeat_interleave(rows_per_list, 0);
  return {listed, rest};
}

}  // namespace

ShortlistLogits shortlist_logits(const torch::Tensor& hidden, const torch::Tensor& matrix,
                                 const ShortlistColumns& columns, int64_t rows_per_list, const Int8Rows* int8) {
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
  const auto& spread = columns.spread;
  TORCH_CHECK(spread.basis.dim() == 2 && spread.basis.size(0) == hidden.size(1) && spread.excess.dim() == 1 &&
                  spread.excess.size(0) == spread.basis.size(1),
              "shortlist_logits: the spread of the matrix's rows is not [D, r] and [r]");
  if (int8 != nullptr && int8->defined()) {
    TORCH_CHECK(int8->values.sizes() == matrix.sizes(), "shortlist_logits: int8 rows ", int8->values.sizes(),
                " of another matrix than ", matrix.sizes());
  }
  return checked_logits(hidden, matrix, columns, rows_per_list, int8);
}

}  // namespace tfm
