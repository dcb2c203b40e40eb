#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// The output projection under a shortlist: each row scored over its own sentence's candidates
/// only, so that a sentence's scores do not depend on the others in its batch.
/// hidden: [N, D]; matrix: [V, D], the output matrix in hidden's dtype; candidates: [M, C] int64
/// on the CPU (Shortlist::candidates: sorted ids, then -1 as padding); row n reads candidates row
/// n / rows_per_list (beam search's K rows of a sentence share its list).
/// -> [N, C] float32: logits[n][c] = hidden[n] . matrix[candidates[n / rows_per_list][c]], and -inf
/// where the candidate is padding. On the CPU (float32 or bfloat16, D a multiple of 16) each
/// candidate's row is read in place, a block of 16 at a time for all rows of a list; elsewhere the
/// whole vocabulary is scored and the candidates' columns gathered.
torch::Tensor shortlist_logits(const torch::Tensor& hidden, const torch::Tensor& matrix,
                               const torch::Tensor& candidates, int64_t rows_per_list);

}  // namespace tfm
