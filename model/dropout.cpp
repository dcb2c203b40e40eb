#include "model/dropout.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <torch/torch.h>

#include "runtime/kernels.h"
#include "runtime/parallel_for.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

/// Elements per Philox subsequence: a block is the unit of parallel work, so the mask is the same
/// whichever thread fills which block.
constexpr int64_t kBlock = 4096;

thread_local DropoutSeedScope* seed_scope = nullptr;

uint64_t random64(at::Generator& generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

/// Draws per block: each draw decides two elements.
constexpr int64_t kDrawsPerBlock = kBlock / 2;
/// Philox counters computed side by side: one AVX-512 register of 32-bit lanes.
constexpr int64_t kCounterLanes = 16;
constexpr uint32_t kMultiplierA = 0xD2511F53, kMultiplierB = 0xCD9E8D57;  // Philox's round multipliers
constexpr uint32_t kKeyStepA = 0x9E3779B9, kKeyStepB = 0xBB67AE85;        // its key schedule

/// The draws at::philox_engine(seed, subsequence, 0) returns, in order: Philox4x32-10 of the
/// counters (c, 0, subsequence) for c = 0, 1, ..., four draws each. The rounds run on
/// kCounterLanes counters at once so that they vectorize; the engine computes one at a time, which
/// was most of dropout's cost. draws: kDrawsPerBlock values.
TFM_VECTOR_CLONES void philox_lanes(uint64_t seed, uint64_t subsequence, uint32_t* draws) {
  for (int64_t first = 0; first < kDrawsPerBlock / 4; first += kCounterLanes) {
    uint32_t c0[kCounterLanes], c1[kCounterLanes], c2[kCounterLanes], c3[kCounterLanes];
    for (int64_t j = 0; j < kCounterLanes; ++j) {
      c0[j] = static_cast<uint32_t>(first + j);
      c1[j] = 0;
      c2[j] = static_cast<uint32_t>(subsequence);
      c3[j] = static_cast<uint32_t>(subsequence >> 32);
    }
    uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      for (int64_t j = 0; j < kCounterLanes; ++j) {
        const uint64_t product0 = static_cast<uint64_t>(kMultiplierA) * c0[j];
        const uint64_t product1 = static_cast<uint64_t>(kMultiplierB) * c2[j];
        const uint32_t next0 = static_cast<uint32_t>(product1 >> 32) ^ c1[j] ^ key0;
        const uint32_t next2 = static_cast<uint32_t>(product0 >> 32) ^ c3[j] ^ key1;
        c0[j] = next0;
        c1[j] = static_cast<uint32_t>(product1);
        c2[j] = next2;
        c3[j] = static_cast<uint32_t>(product0);
      }
      key0 += kKeyStepA;
      key1 += kKeyStepB;
    }
    uint32_t* out = draws + first * 4;
    for (int64_t j = 0; j < kCounterLanes; ++j) {
      out[4 * j] = c0[j];
      out[4 * j + 1] = c1[j];
      out[4 * j + 2] = c2[j];
      out[4 * j + 3] = c3[j];
    }
  }
}

#ifdef TFM_EXTENSION_KERNELS
// Every lane kept, for the zero-masked forms of the intrinsics below: GCC 12 warns that the plain
// forms' undefined pass-through operand is read uninitialized (GCC bug 105593).
constexpr __mmask8 kAll64 = 0xFF;
constexpr __mmask16 kAll32 = 0xFFFF;

/// The high and low 32 bits of each lane's product with `multiplier` (in every lane).
TFM_AVX512_TARGET TFM_ALWAYS_INLINE void multiply_wide(__m512i x, __m512i multiplier, __m512i& high, __m512i& low) {
  constexpr __mmask16 kOdd = 0xAAAA;
  const __m512i even = _mm512_maskz_mul_epu32(kAll64, x, multiplier);  // lanes 0, 2, ...: 64 bits
  const __m512i odd = _mm512_maskz_mul_epu32(kAll64, _mm512_maskz_srli_epi64(kAll64, x, 32), multiplier);
  high = _mm512_mask_blend_epi32(kOdd, _mm512_maskz_srli_epi64(kAll64, even, 32), odd);
  low = _mm512_mask_blend_epi32(kOdd, even, _mm512_maskz_slli_epi64(kAll64, odd, 32));
}

/// philox_lanes in AVX-512 intrinsics, the same draws: from the loop the compiler made 64-bit
/// multiplies (vpmullq) and shuffled the halves between registers, most of a bfloat16 training
/// step's dropout; here each 32 x 32 -> 64-bit product is two vpmuludq, and each 16 counters' four
/// outputs are interleaved into draw order in registers.
TFM_AVX512_TARGET void philox_avx512(uint64_t seed, uint64_t subsequence, uint32_t* draws) {
  const __m512i multiplier_a = _mm512_set1_epi32(static_cast<int>(kMultiplierA));
  const __m512i multiplier_b = _mm512_set1_epi32(static_cast<int>(kMultiplierB));
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i sub_low = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(subsequence)));
  const __m512i sub_high = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(subsequence >> 32)));
  for (int64_t first = 0; first < kDrawsPerBlock / 4; first += kCounterLanes) {
    __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first)), lanes);
    __m512i c1 = _mm512_setzero_si512(), c2 = sub_low, c3 = sub_high;
    uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      __m512i high0, low0, high1, low1;
      multiply_wide(c0, multiplier_a, high0, low0);
      multiply_wide(c2, multiplier_b, high1, low1);
      c0 = _mm512_xor_si512(_mm512_xor_si512(high1, c1), _mm512_set1_epi32(static_cast<int>(key0)));
      c1 = low1;
      c2 = _mm512_xor_si512(_mm512_xor_si512(high0, c3), _mm512_set1_epi32(static_cast<int>(key1)));
      c3 = low0;
      key0 += kKeyStepA;
      key1 += kKeyStepB;
    }
    // Counter j's outputs go to draws 4j .. 4j+3: a 4 x 4 transpose within each 128-bit lane, then
    // of the lanes across the four registers.
    const __m512i t0 = _mm512_maskz_unpacklo_epi32(kAll32, c0, c1), t1 = _mm512_maskz_unpackhi_epi32(kAll32, c0, c1);
    const __m512i t2 = _mm512_maskz_unpacklo_epi32(kAll32, c2, c3), t3 = _mm512_maskz_unpackhi_epi32(kAll32, c2, c3);
    const __m512i u0 = _mm512_maskz_unpacklo_epi64(kAll64, t0, t2),
                  u1 = _mm512_maskz_unpackhi_epi64(kAll64, t0, t2);  // j = 4l, 4l + 1
    const __m512i u2 = _mm512_maskz_unpacklo_epi64(kAll64, t1, t3),
                  u3 = _mm512_maskz_unpackhi_epi64(kAll64, t1, t3);  // j = 4l + 2, 4l + 3
    const __m512i front01 = _mm512_maskz_shuffle_i32x4(kAll32, u0, u1, 0x44),
                  front23 = _mm512_maskz_shuffle_i32x4(kAll32, u2, u3, 0x44);
    const __m512i back01 = _mm512_maskz_shuffle_i32x4(kAll32, u0, u1, 0xEE),
                  back23 = _mm512_maskz_shuffle_i32x4(kAll32, u2, u3, 0xEE);
    uint32_t* out = draws + first * 4;
    _mm512_storeu_si512(out, _mm512_maskz_shuffle_i32x4(kAll32, front01, front23, 0x88));
    _mm512_storeu_si512(out + 16, _mm512_maskz_shuffle_i32x4(kAll32, front01, front23, 0xDD));
    _mm512_storeu_si512(out + 32, _mm512_maskz_shuffle_i32x4(kAll32, back01, back23, 0x88));
    _mm512_storeu_si512(out + 48, _mm512_maskz_shuffle_i32x4(kAll32, back01, back23, 0xDD));
  }
}
#endif

/// kDrawsPerBlock draws of block `subsequence`: philox_avx512 where the CPU has AVX-512, else
/// philox_lanes.
void philox_block(uint64_t seed, uint64_t subsequence, uint32_t* draws) {
#ifdef TFM_EXTENSION_KERNELS
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return philox_avx512(seed, subsequence, draws);
#endif
  philox_lanes(seed, subsequence, draws);
}

/// Each draw decides elements 2j (its low 16 bits) and 2j + 1 (its high 16 bits). The pair is
/// written as one word of twice the element's width, low element in the low half (x86 is
/// little-endian), so that the loop is one compare-and-select per lane and vectorizes; per
/// element, with bfloat16 as a class, it did not.
template <typename Pair, typename Bits>
TFM_ALWAYS_INLINE void mask_pairs(const uint32_t* draws, uint32_t threshold, Bits scale, Pair* out, int64_t pairs) {
  constexpr int kShift = 8 * sizeof(Bits);
  for (int64_t j = 0; j < pairs; ++j) {
    const uint32_t draw = draws[j];
    const Pair low = (draw & 0xFFFFU) >= threshold ? scale : 0;
    const Pair high = (draw >> 16) >= threshold ? scale : 0;
    out[j] = low | (high << kShift);
  }
}
using AliasedU32 = uint32_t __attribute__((may_alias));
using AliasedU64 = uint64_t __attribute__((may_alias));
TFM_VECTOR_CLONES void mask_pairs_of(const uint32_t* draws, uint32_t threshold, uint16_t scale, AliasedU32* out,
                                     int64_t pairs) {
  mask_pairs(draws, threshold, scale, out, pairs);
}
TFM_VECTOR_CLONES void mask_pairs_of(const uint32_t* draws, uint32_t threshold, uint32_t scale, AliasedU64* out,
                                     int64_t pairs) {
  mask_pairs(draws, threshold, scale, out, pairs);
}

/// out[i] = scale where element i's 16 bits of its draw reach threshold, else 0; i in [0, count).
template <typename T>
void mask_of(const uint32_t* draws, uint32_t threshold, T scale, T* out, int64_t count) {
  if constexpr (sizeof(T) == 2) {
    uint16_t scale_bits;
    std::memcpy(&scale_bits, &scale, sizeof scale_bits);
    mask_pairs_of(draws, threshold, scale_bits, reinterpret_cast<AliasedU32*>(out), count / 2);
  } else if constexpr (sizeof(T) == 4) {
    uint32_t scale_bits;
    std::memcpy(&scale_bits, &scale, sizeof scale_bits);
    mask_pairs_of(draws, threshold, scale_bits, reinterpret_cast<AliasedU64*>(out), count / 2);
  } else {
    for (int64_t i = 0; i + 1 < count; i += 2) {
      out[i] = (draws[i / 2] & 0xFFFFU) >= threshold ? scale : static_cast<T>(0.0F);
      out[i + 1] = (draws[i / 2] >> 16) >= threshold ? scale : static_cast<T>(0.0F);
    }
  }
  if (count % 2 == 1) {
    out[count - 1] = (draws[count / 2] & 0xFFFFU) >= threshold ? scale : static_cast<T>(0.0F);
  }
}

/// noise[i] = 0 with probability p, else 1 / (1 - p), in noise's dtype.
void fill_noise(torch::Tensor& noise, double p) {
  const uint64_t seed = next_dropout_seed();
  // Each 32-bit draw decides two elements, 16 bits each: drop where the half falls below
  // p * 2^16 (p to within 2^-17, and half the generator's work of one draw per element).
  const auto threshold = static_cast<uint32_t>(p * 65536.0 + 0.5);
  const int64_t n = noise.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, noise.scalar_type(), "tfm_dropout", [&] {
    auto* out = noise.data_ptr<scalar_t>();
    const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<uint32_t> draws(kDrawsPerBlock);
      for (int64_t block = begin; block < end; ++block) {
        philox_block(seed, static_cast<uint64_t>(block), draws.data());
        const int64_t first = block * kBlock;
        mask_of(draws.data(), threshold, scale, out + first, std::min(n, first + kBlock) - first);
      }
    });
  });
}

}  // namespace

torch::Tensor dropout_noise(const torch::Tensor& like, double p) {
  TORCH_CHECK(like.is_cpu() && p >= 0.0 && p < 1.0, "dropout_noise: a CPU tensor and 0 <= p < 1");
  auto noise = torch::empty(like.sizes(), like.options().requires_grad(false));
  torch::NoGradGuard no_grad;
  fill_noise(noise, p);
  return noise;
}

torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  if (!fused_kernels() || !x.is_cpu() || p >= 1.0) return torch::dropout(x, p, training);
  return x * dropout_noise(x, p);
}

DropoutSeedScope::DropoutSeedScope(uint64_t seed)
    : outer_(seed_scope), generator_(at::make_generator<at::CPUGeneratorImpl>(seed)) {
  seed_scope = this;
}

DropoutSeedScope::~DropoutSeedScope() { seed_scope = outer_; }

uint64_t next_dropout_seed() {
  if (seed_scope != nullptr) return random64(seed_scope->generator_);
  auto generator = at::detail::getDefaultCPUGenerator();
  return random64(generator);
}

}  // namespace tfm
