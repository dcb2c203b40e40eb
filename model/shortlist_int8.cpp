#include "model/shortlist_int8.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

namespace tfm {

Int8Rows int8_rows(const torch::Tensor& matrix) {
  torch::NoGradGuard no_grad;
  const auto rows = matrix.detach().to(torch::kCPU, torch::kFloat32);  // [V, D]
  const auto scales = (rows.abs().amax(1) / 127.0).clamp_min(std::numeric_limits<float>::min());
  const auto values = (rows / scales.unsqueeze(1)).round().clamp(-127, 127).to(torch::kInt8).contiguous();
  return {values, scales.contiguous(), values.sum(1, /*keepdim=*/false, torch::kInt).contiguous()};
}

// The AVX512-VNNI kernel. Without it (other CPUs, and TFM_ONE_CLONE builds, which measure what a
// CPU without AVX-512 runs) the float32 kernel serves.
#ifdef TFM_EXTENSION_KERNELS
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
/// The unsigned offset of a quantized hidden value: VNNI multiplies unsigned by signed bytes, so
/// q + 128 goes in, and 128 times the candidate row's sum comes off again.
constexpr int32_t kOffset = 128;
/// Bytes per step of the products: one AVX-512 register.
constexpr int64_t kStep = 64;

using Bytes = uint8_t __attribute__((vector_size(16)));

/// x [D] -> out [D]: round(x / scale) + 128 in [1, 255], scale = max |x| / 127 (returned). In GCC's
/// vector types: GCC 12 warns of uninitialized values inside its own AVX-512 conversion intrinsics.
TFM_VNNI_TARGET float quantize_row(const float* x, int64_t dim, uint8_t* out) {
  const IntWhole magnitude = IntWhole{} + 0x7fffffff;
  FloatWhole largest{};
  for (int64_t d = 0; d < dim; d += kVectorLanes) {
    FloatWhole v;
    std::memcpy(&v, x + d, sizeof(v));
    const auto size = reinterpret_cast<FloatWhole>(reinterpret_cast<IntWhole>(v) & magnitude);
    largest = size > largest ? size : largest;
  }
  float top = 0;
  for (int64_t lane = 0; lane < kVectorLanes; ++lane) top = std::max(top, largest[lane]);
  const float scale = top > 0 ? top / 127.0F : 1.0F;
  const float inverse = 1.0F / scale;
  // Adding and taking off 1.5 * 2^23 rounds to the nearest integer (ties to even) below 2^22.
  constexpr float kRounder = 12582912.0F;
  for (int64_t d = 0; d < dim; d += kVectorLanes) {
    FloatWhole v;
    std::memcpy(&v, x + d, sizeof(v));
    const FloatWhole rounded = (v * inverse + kRounder) - kRounder;
    IntWhole q = __builtin_convertvector(rounded, IntWhole) + kOffset;
    q = q < 0 ? IntWhole{} : q;
    q = q > 255 ? IntWhole{} + 255 : q;
    const Bytes bytes = __builtin_convertvector(q, Bytes);
    std::memcpy(out + d, &bytes, sizeof(bytes));
  }
  return scale;
}

/// How many tiles ahead the candidates' rows are prefetched (as in the float kernel).
constexpr int64_t kPrefetchTiles = 2;

/// Rows [row, row + Rows) of one list against all of its candidates, tiles of Rows x 16 / Rows
/// products whose 16 int32 accumulators one sums_of_lanes reduces.
/// quantized [rows, D] and scales [rows]: the rows from `first` on, as quantize_row made them.
template <int Rows>
TFM_VNNI_TARGET void score_tiles(const Int8ListedViews& a, const uint8_t* quantized, const float* row_scales,
                                 int64_t first, int64_t row, const int64_t* ids) {
  constexpr int kColumns = kVectorLanes / Rows;
  const uint8_t* xs[Rows];
  for (int r = 0; r < Rows; ++r) xs[r] = quantized + (row + r - first) * a.dim;
  const float* x_scales = row_scales + (row - first);
  const int8_t* values = a.rows->values.data_ptr<int8_t>();
  const float* scales = a.rows->scales.data_ptr<float>();
  const int32_t* sums = a.rows->sums.data_ptr<int32_t>();
  for (int64_t block = 0; block < a.width; block += kColumns) {
    const int64_t ahead = block + kPrefetchTiles * kColumns;
    for (int64_t c = ahead; c < std::min<int64_t>(ahead + kColumns, a.width) && ids[c] >= 0; ++c) {
      prefetch_bytes(values + ids[c] * a.dim, a.dim);
    }
    const int64_t count = std::min<int64_t>(kColumns, a.width - block);
    const int8_t* columns[kColumns];
    for (int64_t c = 0; c < kColumns; ++c) {
      const int64_t id = c < count ? ids[block + c] : -1;
      columns[c] = values + std::max<int64_t>(id, 0) * a.dim;  // padding reads row 0, then drops it
    }
    __m512i products[kVectorLanes];
    for (auto& p : products) p = _mm512_setzero_si512();
    for (int64_t d = 0; d < a.dim; d += kStep) {
      __m512i x[Rows];
      for (int r = 0; r < Rows; ++r) x[r] = _mm512_loadu_si512(xs[r] + d);
      for (int c = 0; c < kColumns; ++c) {
        const __m512i column = _mm512_loadu_si512(columns[c] + d);
        for (int r = 0; r < Rows; ++r) {
          products[r * kColumns + c] = _mm512_dpbusd_epi32(products[r * kColumns + c], x[r], column);
        }
      }
    }
    WideLanes lanes[kVectorLanes];
    for (int64_t i = 0; i < kVectorLanes; ++i) {
      lanes[i].v = __builtin_convertvector(reinterpret_cast<IntWhole>(products[i]), FloatWhole);
    }
    float totals[kVectorLanes];
    store_lanes(totals, sums_of_lanes(lanes));
    for (int r = 0; r < Rows; ++r) {
      float* out = a.listed + (row + r) * a.width + block;
      for (int64_t c = 0; c < count; ++c) {
        const int64_t id = ids[block + c];
        out[c] = id < 0 ? kNegInf
                        : x_scales[r] * scales[id] *
                              (totals[r * kColumns + c] - static_cast<float>(kOffset) * static_cast<float>(sums[id]));
      }
    }
  }
}

TFM_VNNI_TARGET void score_rows(const Int8ListedViews& a, int64_t begin, int64_t end) {
  // Each thread's quantized rows, kept from step to step: no allocation per step.
  thread_local std::vector<uint8_t> quantized;  // [rows, D]
  thread_local std::vector<float> row_scales;   // [rows]
  quantized.resize(static_cast<size_t>((end - begin) * a.dim));
  row_scales.resize(static_cast<size_t>(end - begin));
  for (int64_t row = begin; row < end; ++row) {
    row_scales[row - begin] = quantize_row(a.hidden + row * a.dim, a.dim, quantized.data() + (row - begin) * a.dim);
  }
  for (int64_t first = begin; first < end;) {
    const int64_t list = first / a.rows_per_list;
    const int64_t last = std::min(end, (list + 1) * a.rows_per_list);
    const int64_t* ids = a.candidates + list * a.width;
    int64_t row = first;
    for (; row + 4 <= last; row += 4) score_tiles<4>(a, quantized.data(), row_scales.data(), begin, row, ids);
    for (; row + 2 <= last; row += 2) score_tiles<2>(a, quantized.data(), row_scales.data(), begin, row, ids);
    for (; row < last; ++row) score_tiles<1>(a, quantized.data(), row_scales.data(), begin, row, ids);
    first = last;
  }
}

}  // namespace

bool int8_listed_supported(int64_t dim) {
  static const bool cpu_has_it = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  return cpu_has_it && dim > 0 && dim % kStep == 0;
}

void int8_listed_rows(const Int8ListedViews& a, int64_t begin, int64_t end) {
  TORCH_CHECK(int8_listed_supported(a.dim), "int8_listed_rows: not on this CPU, or D ", a.dim, " not a multiple of 64");
  score_rows(a, begin, end);
}

#else

bool int8_listed_supported(int64_t) { return false; }

void int8_listed_rows(const Int8ListedViews&, int64_t, int64_t) {
  TORCH_CHECK(false, "int8_listed_rows: built without AVX512-VNNI kernels");
}

#endif

}  // namespace tfm
