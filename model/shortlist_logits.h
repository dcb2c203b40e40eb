#pragma once
#include <cstdint>

#include <torch/types.h>

#include "model/shortlist_columns.h"
#include "model/shortlist_int8.h"

namespace tfm {

/// A step's logits under a shortlist (shortlist_logits): the candidates' columns, contiguous for
/// the search that reads them, and the stand-in for the tokens left out.
struct ShortlistLogits {
  torch::Tensor listed;  // [N, C] float32
  torch::Tensor rest;    // [N] float32
};

/// The output projection under a shortlist: each row scored over its own sentence's candidates
/// only, so that a sentence's scores do not depend on the others in its batch.
/// hidden: [N, D]; matrix: [V, D], the output matrix in hidden's dtype; row n reads list
/// n / rows_per_list (beam search's K rows of a sentence share its list).
/// -> listed [N, C] float32: listed[n][c] = hidden[n] . matrix[candidates[n / rows_per_list][c]],
/// -inf where the candidate is padding; and rest [N], an estimate of log sum exp(logits) over the
/// tokens the list leaves out: log(count) + h . (their mean row) + h^T spread h / 2, with the
/// spread of all rows in low-rank form (RowSpread, model/shortlist_columns.h); exact if their rows
/// were normally distributed and the spread whole. A softmax over the
/// C columns and rest is then normalized nearly as over the whole vocabulary, not over the
/// candidates alone: a model trained with label smoothing gives every token some probability, and
/// thousands of left-out tokens hold several percent of it at every step (BENCHMARKS.md).
/// On the CPU (float32 or bfloat16, D a multiple of 16) each candidate's row is read in place, in
/// tiles of up to 4 of a list's rows by 4 candidates, prefetched ahead; elsewhere the whole
/// vocabulary is scored and the candidates' columns gathered.
/// int8: the matrix's rows in int8 (a model that decodes in int8): where the CPU has AVX512-VNNI
/// and D is a multiple of 64, float32 rows' candidates are scored from them (int8_listed_rows).
ShortlistLogits shortlist_logits(const torch::Tensor& hidden, const torch::Tensor& matrix,
                                 const ShortlistColumns& columns, int64_t rows_per_list,
                                 const Int8Rows* int8 = nullptr);

}  // namespace tfm
