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

// The AVX512-VNNI and AVX2 kernels. Without them (other CPUs, and TFM_ONE_CLONE builds, which
// measure the lane versions alone) the float32 kernel serves.
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

/// The candidates of the tile from column `block` on: their int8 rows in `columns` (padding reads
/// row 0, and its products are dropped), the rows of the tile kPrefetchTiles ahead asked for.
/// Returns how many of the Columns are candidates.
template <int Columns>
TFM_ALWAYS_INLINE int64_t tile_columns(const Int8ListedViews& a, const int8_t* values, const int64_t* ids,
                                       int64_t block, const int8_t* (&columns)[Columns]) {
  const int64_t ahead = block + kPrefetchTiles * Columns;
  for (int64_t c = ahead; c < std::min<int64_t>(ahead + Columns, a.width) && ids[c] >= 0; ++c) {
    prefetch_bytes(values + ids[c] * a.dim, a.dim);
  }
  const int64_t count = std::min<int64_t>(Columns, a.width - block);
  for (int64_t c = 0; c < Columns; ++c) {
    const int64_t id = c < count ? ids[block + c] : -1;
    columns[c] = values + std::max<int64_t>(id, 0) * a.dim;
  }
  return count;
}

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
    const int8_t* columns[kColumns];
    const int64_t count = tile_columns(a, values, ids, block, columns);
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

// The AVX2 kernel. AVX2 multiplies unsigned by signed bytes and adds each pair of products into
// 16 bits with saturation, which 255 x 127 twice would overflow; so it multiplies |q_n| by the
// candidate's byte with q_n's sign moved onto it: each pair of products is then at most
// 2 x 127 x 127 < 2^15, and the sums are exact, the same as VNNI's.

/// Bytes per step of the AVX2 products: one AVX register.
constexpr int64_t kAvx2Step = 32;
/// How many candidates ahead the AVX2 kernel asks for a candidate's row.
constexpr int64_t kAvx2PrefetchColumns = 4;

/// x [D] -> q [D] = round(x / scale) within [-127, 127] and |q| [D], scale = max |x| / 127
/// (returned): the same q as quantize_row's, less its offset.
TFM_AVX2_TARGET float quantize_row_signed(const float* x, int64_t dim, int8_t* q, uint8_t* magnitudes) {
  const IntHalf magnitude = IntHalf{} + 0x7fffffff;
  FloatHalf largest{};
  for (int64_t d = 0; d < dim; d += 8) {
    FloatHalf v;
    std::memcpy(&v, x + d, sizeof(v));
    const auto size = reinterpret_cast<FloatHalf>(reinterpret_cast<IntHalf>(v) & magnitude);
    largest = size > largest ? size : largest;
  }
  float top = 0;
  for (int lane = 0; lane < 8; ++lane) top = std::max(top, largest[lane]);
  const float scale = top > 0 ? top / 127.0F : 1.0F;
  const float inverse = 1.0F / scale;
  constexpr float kRounder = 12582912.0F;  // as in quantize_row
  for (int64_t d = 0; d < dim; ++d) {
    const float rounded = (x[d] * inverse + kRounder) - kRounder;
    const auto value = static_cast<int8_t>(std::clamp(static_cast<int32_t>(rounded), -127, 127));
    q[d] = value;
    magnitudes[d] = static_cast<uint8_t>(value < 0 ? -value : value);
  }
  return scale;
}

/// accumulator += the products of one row's 32 bytes at `at` (q at q_row + at, |q| at m_row + at)
/// and the candidate's 32 bytes `column`, in 8 int32 lanes.
TFM_AVX2_TARGET TFM_ALWAYS_INLINE __m256i add_products(__m256i accumulator, __m256i column, const int8_t* q_row,
                                                       const uint8_t* m_row, int64_t at) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q_row + at));
  const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m_row + at));
  const __m256i pairs = _mm256_maddubs_epi16(m, _mm256_sign_epi8(column, q));  // [16] int16
  return _mm256_add_epi32(accumulator, _mm256_madd_epi16(pairs, ones));
}

/// Rows [row, row + Rows) of one list (Rows <= 4) against each of its candidates in turn. Each
/// candidate's row is read once for all Rows rows, whose own bytes are read from the first-level
/// cache as they are multiplied. The accumulators are named, not an array: GCC spilled an array
/// of them to the stack, at about half the products per second (BENCHMARKS.md).
template <int Rows>
TFM_AVX2_TARGET void score_tiles_avx2(const Int8ListedViews& a, const int8_t* quantized, const uint8_t* magnitudes,
                                      const float* row_scales, int64_t first, int64_t row, const int64_t* ids) {
  static_assert(Rows >= 1 && Rows <= 4, "one to four rows");
  const int64_t dim = a.dim;
  const int64_t at = (row - first) * dim;
  const int8_t* q0 = quantized + at;
  const uint8_t* m0 = magnitudes + at;
  float x_scales[4] = {};
  std::copy_n(row_scales + (row - first), Rows, x_scales);
  const __m128 row_scale = _mm_loadu_ps(x_scales);
  const int8_t* values = a.rows->values.data_ptr<int8_t>();
  const float* scales = a.rows->scales.data_ptr<float>();
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < a.width; ++c) {
    const int64_t id = ids[c];
    if (id < 0) {  // padding: the list's candidates are over
      for (int r = 0; r < Rows; ++r) std::fill_n(a.listed + (row + r) * a.width + c, a.width - c, kNegInf);
      return;
    }
    const int64_t ahead = c + kAvx2PrefetchColumns;
    if (ahead < a.width && ids[ahead] >= 0) prefetch_bytes(values + ids[ahead] * dim, dim);
    const int8_t* column = values + id * dim;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t d = 0; d < dim; d += kAvx2Step) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column + d));
      s0 = add_products(s0, w, q0, m0, d);
      if constexpr (Rows > 1) s1 = add_products(s1, w, q0 + dim, m0 + dim, d);
      if constexpr (Rows > 2) s2 = add_products(s2, w, q0 + 2 * dim, m0 + 2 * dim, d);
      if constexpr (Rows > 3) s3 = add_products(s3, w, q0 + 3 * dim, m0 + 3 * dim, d);
    }
    // Lane r: s_r's 8 lanes summed, then scale_r x scale_id x that sum (in that order).
    const __m256i pairs = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
    const __m128i totals = _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
    float logits[4];
    _mm_storeu_ps(logits, _mm_mul_ps(_mm_mul_ps(row_scale, _mm_set1_ps(scales[id])), _mm_cvtepi32_ps(totals)));
    for (int r = 0; r < Rows; ++r) a.listed[(row + r) * a.width + c] = logits[r];
  }
}

TFM_AVX2_TARGET void score_rows_avx2(const Int8ListedViews& a, int64_t begin, int64_t end) {
  thread_local std::vector<int8_t> quantized;    // [rows, D]
  thread_local std::vector<uint8_t> magnitudes;  // [rows, D]
  thread_local std::vector<float> row_scales;    // [rows]
  quantized.resize(static_cast<size_t>((end - begin) * a.dim));
  magnitudes.resize(quantized.size());
  row_scales.resize(static_cast<size_t>(end - begin));
  for (int64_t row = begin; row < end; ++row) {
    const int64_t at = (row - begin) * a.dim;
    row_scales[row - begin] =
        quantize_row_signed(a.hidden + row * a.dim, a.dim, quantized.data() + at, magnitudes.data() + at);
  }
  for (int64_t first = begin; first < end;) {
    const int64_t list = first / a.rows_per_list;
    const int64_t last = std::min(end, (list + 1) * a.rows_per_list);
    const int64_t* ids = a.candidates + list * a.width;
    int64_t row = first;
    const auto* q = quantized.data();
    const auto* m = magnitudes.data();
    for (; row + 4 <= last; row += 4) score_tiles_avx2<4>(a, q, m, row_scales.data(), begin, row, ids);
    if (last - row == 3) score_tiles_avx2<3>(a, q, m, row_scales.data(), begin, row, ids);
    if (last - row == 2) score_tiles_avx2<2>(a, q, m, row_scales.data(), begin, row, ids);
    if (last - row == 1) score_tiles_avx2<1>(a, q, m, row_scales.data(), begin, row, ids);
    first = last;
  }
}

/// Whether `kernel` computes on this CPU for rows of `dim`.
bool computes(Int8Products kernel, int64_t dim) {
  static const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (dim <= 0) return false;
  return kernel == Int8Products::kVnni ? vnni && dim % kStep == 0 : avx2 && dim % kAvx2Step == 0;
}

}  // namespace

std::vector<Int8Products> int8_listed_kernels(int64_t dim) {
  std::vector<Int8Products> kernels;
  for (const auto kernel : {Int8Products::kVnni, Int8Products::kAvx2}) {
    if (computes(kernel, dim)) kernels.push_back(kernel);
  }
  return kernels;
}

bool int8_listed_supported(int64_t dim) {
  return computes(Int8Products::kVnni, dim) || computes(Int8Products::kAvx2, dim);
}

void int8_listed_rows(const Int8ListedViews& a, int64_t begin, int64_t end, Int8Products kernel) {
  TORCH_CHECK(computes(kernel, a.dim), "int8_listed_rows: the kernel does not compute on this CPU for D ", a.dim);
  if (kernel == Int8Products::kVnni) {
    score_rows(a, begin, end);
  } else {
    score_rows_avx2(a, begin, end);
  }
}

void int8_listed_rows(const Int8ListedViews& a, int64_t begin, int64_t end) {
  int8_listed_rows(a, begin, end, computes(Int8Products::kVnni, a.dim) ? Int8Products::kVnni : Int8Products::kAvx2);
}

#else

std::vector<Int8Products> int8_listed_kernels(int64_t) { return {}; }

bool int8_listed_supported(int64_t) { return false; }

void int8_listed_rows(const Int8ListedViews&, int64_t, int64_t, Int8Products) {
  TORCH_CHECK(false, "int8_listed_rows: built without its kernels");
}

void int8_listed_rows(const Int8ListedViews&, int64_t, int64_t) {
  TORCH_CHECK(false, "int8_listed_rows: built without its kernels");
}

#endif

}  // namespace tfm
