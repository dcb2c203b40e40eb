#pragma once
#include <cstdint>
#include <vector>

#include <c10/util/BFloat16.h>

namespace tfm {

/// SmallRowsProduct's products over the inputs that are not zero in every row. A feed-forward
/// layer's second product reads a ReLU's output: at a beam's 4 rows about two thirds of its inputs
/// are zero in all of them (BENCHMARKS.md), and every such input is a slice of the weight that
/// need not be read at all. A decoding step at a few rows streams its weights from memory, so the
/// bytes skipped are time saved. Not on AMX tiles, where bfloat16 products sum every input at
/// about the same speed (model/bf16_block_amx.h).
///
/// The sums run over the live inputs in ascending order with one fused multiply-add each (float32)
/// or one AVX512-BF16 dot product per pair of inputs (bfloat16), as LIBXSMM's kernels run over all
/// of them: an input that is zero in every row only adds zeros, so the results are LIBXSMM's bits
/// (tests/model/live_inputs_product_test.cpp).

/// Rows up to which skipping is tried: over more rows an input is rarely zero in all of them.
constexpr int64_t kLiveInputsMaxRows = 8;

/// Whether this CPU has the kernels: AVX-512 for float32, AVX512-BF16 for bfloat16.
bool live_inputs_kernels(bool bfloat16);

/// The inputs of x [rows, in] (rows `in` apart) that are not zero in some row, ascending, into
/// `live`: float32 columns k, or bfloat16 pairs of columns (2p, 2p + 1) as p, the unit a bfloat16
/// dot product takes (in even). bfloat16 needs live_inputs_kernels(true); float32 runs on any CPU
/// (a word at a time without AVX-512, for model/float_block_avx2.h).
void find_live_inputs(const float* x, int64_t rows, int64_t in, std::vector<int32_t>& live);
void find_live_inputs(const c10::BFloat16* x, int64_t rows, int64_t in, std::vector<int32_t>& live);

/// acc [rows, 64] (rows 64 apart) = x [rows, in] times one 64-output block of SmallRowsProduct's
/// layout ([in', 64] float32, [in'/2, 64, 2] bfloat16), summed over the `count` inputs in `live`.
/// rows <= kLiveInputsMaxRows. Needs live_inputs_kernels().
void multiply_live_inputs(const float* block, const float* x, int64_t rows, int64_t in, const int32_t* live,
                          int64_t count, float* acc);
void multiply_live_inputs(const c10::BFloat16* block, const c10::BFloat16* x, int64_t rows, int64_t in,
                          const int32_t* live, int64_t count, float* acc);

}  // namespace tfm
