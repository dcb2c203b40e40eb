#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// What a shortlist's softmax needs of an output matrix [V, D] as a whole, computed once per matrix.
struct RowMoments {
  torch::Tensor sum;         // [D] float64: the sum of all rows
  torch::Tensor covariance;  // [D, D] float32: their covariance
};

/// matrix: [V, D] on any device, any floating dtype.
RowMoments row_moments(const torch::Tensor& matrix);

/// A shortlist's lists, one per sentence (or encoder output), and what each list's softmax needs of
/// the tokens it leaves out (model/shortlist_logits.h).
struct ShortlistColumns {
  /// [M, C] int64 on the CPU (Shortlist::candidates: sorted ids, then -1 as padding).
  torch::Tensor candidates;
  /// [M, D] in the output matrix's dtype: the mean of the matrix rows a list leaves out.
  torch::Tensor rest_mean;
  /// [M] float32: log of how many tokens a list leaves out (-inf: none).
  torch::Tensor rest_log_count;
  /// [D, D] in the matrix's dtype: the covariance of all its rows, for every list.
  torch::Tensor spread;

  bool defined() const { return candidates.defined(); }
  /// Keeps lists `lists` ([M'] int64 indices, repeats allowed), in that order.
  void select(const torch::Tensor& lists);
  /// `other`'s lists after these, the shorter padded.
  void append(const ShortlistColumns& other);
};

/// The lists of `candidates` ([M, C] as above) over `matrix` ([V, D], whose row_moments are
/// `moments`). Reads only the candidates' rows.
ShortlistColumns shortlist_columns(const torch::Tensor& matrix, const torch::Tensor& candidates,
                                   const RowMoments& moments);

}  // namespace tfm
