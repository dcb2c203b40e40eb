#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// A shortlist's candidates and, per list, what its softmax needs of the tokens it leaves out.
struct ShortlistColumns {
  /// [M, C] int64 on the CPU (Shortlist::candidates: sorted ids, then -1 as padding).
  torch::Tensor candidates;
  /// [M, D] in the output matrix's dtype: the mean of the matrix rows a list leaves out.
  torch::Tensor rest_mean;
  /// [M] float32: log of how many tokens a list leaves out (-inf: none).
  torch::Tensor rest_log_count;
  /// [D, D] in the matrix's dtype: the covariance of all its rows (row_covariance), for every list.
  torch::Tensor spread;

  bool defined() const { return candidates.defined(); }
  /// Keeps lists `lists` ([M'] int64 indices, repeats allowed), in that order.
  void select(const torch::Tensor& lists);
  /// `other`'s lists after these, the shorter padded.
  void append(const ShortlistColumns& other);
};

/// The covariance of matrix's rows ([V, D] -> [D, D] float32): how far logits spread about their
/// mean for a given hidden state (h^T spread h).
torch::Tensor row_covariance(const torch::Tensor& matrix);

/// The lists of `candidates` ([M, C] as above) over `matrix` ([V, D]), with its row_covariance.
ShortlistColumns shortlist_columns(const torch::Tensor& matrix, const torch::Tensor& candidates,
                                   const torch::Tensor& spread);

/// The output projection under a shortlist: each row scored over its own sentence's candidates
/// only, so that a sentence's scores do not depend on the others in its batch.
/// hidden: [N, D]; matrix: [V, D], the output matrix in hidden's dtype; row n reads list
/// n / rows_per_list (beam search's K rows of a sentence share its list).
/// -> [N, C + 1] float32: logits[n][c] = hidden[n] . matrix[candidates[n / rows_per_list][c]], -inf
/// where the candidate is padding, and in column C an estimate of log sum exp(logits) over the
/// tokens the list leaves out: log(count) + h . (their mean row) + h^T spread h / 2, exact if their
/// rows were normally distributed. A softmax over all C + 1 columns is then normalized nearly as
/// over the whole vocabulary, not over the candidates alone: a model trained with label smoothing
/// gives every token some probability, and thousands of left-out tokens hold several percent of it
/// at every step (on Multi30k, normalizing over the candidates alone cost 0.2-0.3 BLEU).
/// On the CPU (float32 or bfloat16, D a multiple of 16) each candidate's row is read in place, a
/// block of 16 at a time for all rows of a list; elsewhere the whole vocabulary is scored and the
/// candidates' columns gathered.
torch::Tensor shortlist_logits(const torch::Tensor& hidden, const torch::Tensor& matrix,
                               const ShortlistColumns& columns, int64_t rows_per_list);

}  // namespace tfm
