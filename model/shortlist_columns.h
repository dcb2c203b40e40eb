#pragma once
#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "model/shortlist_shared.h"

namespace tfm {

/// The covariance S of a matrix's rows in low-rank form: its r leading eigenvectors U, their
/// eigenvalues' excess over s2, the mean of the other D - r, so that
///   h^T S h ~ sum_i excess_i (U^T h)_i^2 + s2 |h|^2,
/// exact along the r leading directions and, averaged over directions, along the others. It costs
/// r / D of the D x D product per row that the shortlist's softmax would otherwise spend on it.
struct RowSpread {
  torch::Tensor basis;   // [D, r] float32: U
  torch::Tensor excess;  // [r] float32
  double residual = 0;   // s2
};

/// r for rows of `dim`: an eighth, in whole blocks of 16 (the kernels' lanes), at most dim.
int64_t spread_rank(int64_t dim);

/// What a shortlist's softmax needs of an output matrix [V, D] as a whole, computed once per matrix.
struct RowMoments {
  torch::Tensor sum;  // [D] float64: the sum of all rows
  RowSpread spread;   // of all rows
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
  /// The spread of all the matrix's rows, for every list; its basis in the matrix's dtype.
  RowSpread spread;
  /// Where the shared candidates are scored on AMX tiles (model/shortlist_shared.h), them; the
  /// other columns are scored list by list. Unset: every column list by list.
  std::shared_ptr<const SharedCandidates> shared;
  /// With `shared`: [M, Co] int64, each list's candidates outside it and their columns, then -1.
  torch::Tensor own_ids, own_columns;
  /// With `shared`: [M, Cs] int64, each list's columns of shared candidates and of padding, and
  /// their places in shared->ids (-1 for padding), then -1.
  torch::Tensor shared_columns, shared_places;

  bool defined() const { return candidates.defined(); }
  /// Keeps lists `lists` ([M'] int64 indices, repeats allowed), in that order.
  void select(const torch::Tensor& lists);
  /// `other`'s lists after these, the shorter padded; scored list by list from now on unless both
  /// share one `shared`.
  void append(const ShortlistColumns& other);
};

/// The lists of `candidates` ([M, C] as above) over `matrix` ([V, D], whose row_moments are
/// `moments`). Reads only the candidates' rows. `rest_correction`: nats added to each list's log
/// count, and so to its left-out tokens' estimated log-mass (Shortlist::rest_correction).
/// `shared`: the matrix's shared candidates (shared_candidates(matrix, ...)), or null.
ShortlistColumns shortlist_columns(const torch::Tensor& matrix, const torch::Tensor& candidates,
                                   const RowMoments& moments, double rest_correction = 0,
                                   std::shared_ptr<const SharedCandidates> shared = nullptr);

}  // namespace tfm
