#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "model/int8_weight.h"

namespace tfm {

/// The instructions int8_listed_rows computes with.
enum class Int8Products {
  kVnni,  // AVX512-VNNI's unsigned-by-signed byte dot products; dim a multiple of 64
  kAvx2,  // AVX2's byte multiply-adds (the signs moved onto one side); dim a multiple of 32
};

/// The kernels that compute on this CPU for rows of `dim`, fastest first; empty: none (the float32
/// kernel serves int8 models).
std::vector<Int8Products> int8_listed_kernels(int64_t dim);

/// Whether int8_listed_rows computes on this CPU for rows of `dim` (int8_listed_kernels not empty).
bool int8_listed_supported(int64_t dim);

/// The views int8_listed_rows reads and writes.
struct Int8ListedViews {
  const float* hidden;        // [N, D]
  const Int8Rows* rows;       // of the output matrix [V, D] (its int8 form's: Int8Weight::rows())
  const int64_t* candidates;  // [M, C]: sorted ids, then -1
  float* listed;              // [N, C]
  int64_t width, dim, rows_per_list;
};

/// Rows [begin, end) of shortlist_logits' listed logits (model/shortlist_logits.h) from int8
/// products: each hidden row quantized to 8 bits with a scale of its own (max |h| / 127), each
/// candidate's row as in `rows`; listed[n][c] = scale_n scale_c (q_n . q_c), -inf at padding.
/// Every kernel gives the same bits: the integer products are exact. With the fastest kernel; only
/// where int8_listed_supported(dim).
void int8_listed_rows(const Int8ListedViews& a, int64_t begin, int64_t end);
/// The same with `kernel`, one of int8_listed_kernels(dim).
void int8_listed_rows(const Int8ListedViews& a, int64_t begin, int64_t end, Int8Products kernel);

}  // namespace tfm
