#include "model/gradient_transpose.h"

#include <algorithm>

#include <torch/torch.h>

#include "runtime/parallel_for.h"
#include "runtime/vector_clones.h"

#if defined(TFM_EXTENSION_KERNELS)
#include <immintrin.h>
#endif

namespace tfm {
namespace {

/// Columns (and rows) a block of the transpose covers: 32 bfloat16 values fill one AVX-512 register.
constexpr int64_t kBlock = 32;
/// Columns one task transposes, a block of rows at a time: 512 bytes of each row.
constexpr int64_t kStrip = 8 * kBlock;

/// Where one strip of columns' results go; `sums` is null when not wanted.
struct ColumnStrip {
  const uint16_t* g;  // [rows, out]
  int64_t rows, out, padded;
  uint16_t* transposed;  // [out, padded], rows `stride` apart
  int64_t stride;
  float* sums;           // [out]
  int64_t first, count;  // columns [first, first + count), count <= kStrip
};

void column_strip_plain(const ColumnStrip& b) {
  float sums[kStrip] = {};
  for (int64_t r = 0; r < b.padded; ++r) {
    for (int64_t c = 0; c < b.count; ++c) {
      const uint16_t value = r < b.rows ? b.g[r * b.out + b.first + c] : 0;
      b.transposed[(b.first + c) * b.stride + r] = value;
      sums[c] += static_cast<float>(c10::BFloat16(value, c10::BFloat16::from_bits()));
    }
  }
  if (b.sums != nullptr) std::copy(sums, sums + b.count, b.sums + b.first);
}

#if defined(TFM_EXTENSION_KERNELS)

// Full masks for the maskz forms of the intrinsics: GCC 12's plain forms start from an undefined
// register and warn that it may be used uninitialized (GCC bug 105593).
constexpr __mmask16 kAll16 = 0xffff;
constexpr __mmask8 kAll8 = 0xff, kAll4 = 0xf;

/// r[i] holds row i of a 16 x 16 matrix of 32-bit words; afterwards r[i] holds its column i.
TFM_AVX512_TARGET TFM_ALWAYS_INLINE void transpose_16x16_words(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // pairs of rows interleaved word by word
    t[i] = _mm512_maskz_unpacklo_epi32(kAll16, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_epi32(kAll16, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // then pairs of those, two words at a time
    r[i] = _mm512_maskz_unpacklo_epi64(kAll8, t[i], t[i + 2]);
    r[i + 1] = _mm512_maskz_unpackhi_epi64(kAll8, t[i], t[i + 2]);
    r[i + 2] = _mm512_maskz_unpacklo_epi64(kAll8, t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_maskz_unpackhi_epi64(kAll8, t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {  // 128-bit lanes: first between rows 4 apart, then 8 apart
    t[i] = _mm512_maskz_shuffle_i32x4(kAll16, r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_maskz_shuffle_i32x4(kAll16, r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_maskz_shuffle_i32x4(kAll16, r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_maskz_shuffle_i32x4(kAll16, r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_maskz_shuffle_i32x4(kAll16, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_maskz_shuffle_i32x4(kAll16, t[i], t[i + 8], 0xdd);
  }
}

/// The float32 values of a register's even (odd = false) or odd bfloat16 values: shifts and masks
/// only, which leave the shuffle port to the transpose.
TFM_AVX512_TARGET TFM_ALWAYS_INLINE __m512 widen_bf16(__m512i v, bool odd) {
  return _mm512_castsi512_ps(odd ? _mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u)))
                                 : _mm512_maskz_slli_epi32(kAll16, v, 16));
}

TFM_AVX512_TARGET void column_strip_avx512(const ColumnStrip& b) {
  // Column 2k of a 32-row block: the even 16-bit halves of word k of rows 0-15 (after their
  // transpose), then those of rows 16-31; column 2k + 1 the odd halves.
  alignas(64) uint16_t even_index[kBlock];
  for (int i = 0; i < 16; ++i) {
    even_index[i] = static_cast<uint16_t>(2 * i);
    even_index[16 + i] = static_cast<uint16_t>(32 + 2 * i);
  }
  const __m512i even = _mm512_load_si512(even_index);
  const __m512i odd = _mm512_add_epi16(even, _mm512_set1_epi16(1));
  alignas(64) float even_sums[kStrip / 2] = {}, odd_sums[kStrip / 2] = {};  // of columns 0, 2, .. and 1, 3, ..
  // Row blocks outside, the strip's column blocks inside: each row's part of the strip is read in
  // one run, and the 32-row blocks go to the same kStrip output rows each time, whose cache lines
  // and pages stay in reach.
  for (int64_t r0 = 0; r0 < b.padded; r0 += kBlock) {
    const int64_t block_rows = std::min(kBlock, b.padded - r0);
    const __mmask32 stored = block_rows == kBlock ? ~__mmask32{0} : (__mmask32{1} << block_rows) - 1;
    for (int64_t c0 = 0; c0 < b.count; c0 += kBlock) {
      const int64_t count = std::min(kBlock, b.count - c0), first = b.first + c0;
      const __mmask32 columns = count == kBlock ? ~__mmask32{0} : (__mmask32{1} << count) - 1;
      __m512i v[kBlock];
      __m512 sum_even = _mm512_setzero_ps(), sum_odd = _mm512_setzero_ps();  // columns 0, 2, .. and 1, 3, ..
      for (int64_t i = 0; i < kBlock; ++i) {
        const int64_t r = r0 + i;
        v[i] = r < b.rows ? _mm512_maskz_loadu_epi16(columns, b.g + r * b.out + first) : _mm512_setzero_si512();
        // The next row block's line: the rows are read 64 bytes at a time, too little for the
        // hardware's prefetchers to follow.
        if (r + kBlock < b.rows)
          _mm_prefetch(reinterpret_cast<const char*>(b.g + (r + kBlock) * b.out + first), _MM_HINT_T0);
        if (b.sums != nullptr && r < b.rows) {
          sum_even = _mm512_add_ps(sum_even, widen_bf16(v[i], false));
          sum_odd = _mm512_add_ps(sum_odd, widen_bf16(v[i], true));
        }
      }
      if (b.sums != nullptr) {
        _mm512_store_ps(even_sums + c0 / 2, _mm512_add_ps(_mm512_load_ps(even_sums + c0 / 2), sum_even));
        _mm512_store_ps(odd_sums + c0 / 2, _mm512_add_ps(_mm512_load_ps(odd_sums + c0 / 2), sum_odd));
      }
      transpose_16x16_words(v);
      transpose_16x16_words(v + 16);
      for (int64_t k = 0; k < 16; ++k) {
        uint16_t* column = b.transposed + (first + 2 * k) * b.stride + r0;
        if (2 * k < count) _mm512_mask_storeu_epi16(column, stored, _mm512_permutex2var_epi16(v[k], even, v[16 + k]));
        if (2 * k + 1 < count) {
          _mm512_mask_storeu_epi16(column + b.stride, stored, _mm512_permutex2var_epi16(v[k], odd, v[16 + k]));
        }
      }
    }
  }
  if (b.sums == nullptr) return;
  for (int64_t c = 0; c < b.count; ++c) b.sums[b.first + c] = c % 2 == 0 ? even_sums[c / 2] : odd_sums[c / 2];
}

#endif

void column_strip(const ColumnStrip& b) {
#if defined(TFM_EXTENSION_KERNELS)
  static const bool avx512 = __builtin_cpu_supports("avx512bw");
  if (avx512) return column_strip_avx512(b);
#endif
  column_strip_plain(b);
}

/// The distance between the transpose's rows for `padded` columns: whole 64-byte lines, and an
/// odd number of them, so that a block's 32 stores (one per row) fall in 32 different sets of
/// the L1 cache; at a multiple of 4 KiB (bucketed row counts such as 2,048) they shared one set.
int64_t transposed_stride(int64_t padded) {
  const int64_t lines = (padded + kBlock - 1) / kBlock;
  return (lines % 2 == 0 ? lines + 1 : lines) * kBlock;
}

}  // namespace

PaddedGradient pad_and_transpose_gradient(const torch::Tensor& g, int64_t padded, bool column_sums) {
  TORCH_CHECK(g.dim() == 2 && g.scalar_type() == torch::kBFloat16 && g.is_cpu() && g.is_contiguous(),
              "pad_and_transpose_gradient: a contiguous [rows, out] bfloat16 CPU gradient is needed");
  const int64_t rows = g.size(0), out = g.size(1);
  TORCH_CHECK(padded >= rows, "pad_and_transpose_gradient: fewer padded rows than rows");
  PaddedGradient result;
  const bool pad = padded > rows;
  result.rows = pad ? torch::empty({padded, out}, g.options()) : g;
  const int64_t stride = transposed_stride(padded);
  result.transposed = torch::empty({out, stride}, g.options()).narrow(1, 0, padded);
  if (column_sums) result.column_sums = torch::empty({out}, g.options().dtype(torch::kFloat32));
  ColumnStrip whole{reinterpret_cast<const uint16_t*>(g.data_ptr<at::BFloat16>()),
                    rows,
                    out,
                    padded,
                    reinterpret_cast<uint16_t*>(result.transposed.data_ptr<at::BFloat16>()),
                    stride,
                    column_sums ? result.column_sums.data_ptr<float>() : nullptr,
                    0,
                    0};
  if (pad) {
    // A pass of its own: stored from the strips' loop, the padded rows were slower, their stores
    // meeting the loads of g's rows at the same offsets modulo 4 KiB (BENCHMARKS.md).
    result.rows.narrow(0, 0, rows).copy_(g);
    result.rows.narrow(0, rows, padded - rows).zero_();
  }
  const int64_t strips = (out + kStrip - 1) / kStrip;
  // A strip is kStrip x padded values; below ~64k values a thread's start costs more than it saves.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(kStrip * padded, 1));
  parallel_for(0, strips, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      ColumnStrip mine = whole;
      mine.first = i * kStrip;
      mine.count = std::min(kStrip, out - mine.first);
      column_strip(mine);
    }
  });
  return result;
}

}  // namespace tfm
