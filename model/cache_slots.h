#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace tfm {

/// Beam search's ancestor table for the self-attention caches: which cache row holds each
/// hypothesis's key and value at each position. A reorder (hypotheses moving among beams, finished
/// sentences leaving) rewrites this table, a few integers per row and position, instead of copying
/// every layer's keys and values of every moved row at every filled position; a step writes row
/// n's new key and value into cache row n at its position, and attention reads position t of row n
/// from cache row slot(n, t).
class CacheSlots {
 public:
  /// Whether row n reads cache row n at every position (nothing reordered since the last reset):
  /// no table is kept then.
  bool identity() const { return rows_ == 0; }
  /// Rows the table describes (0 while identity()).
  int64_t rows() const { return rows_; }
  /// Row n's cache rows by position: entries 0 .. positions written - 1 (not while identity()).
  const int64_t* row(int64_t n) const { return slots_.data() + n * stride_; }
  /// The cache row that holds row n's position t.
  int64_t slot(int64_t n, int64_t t) const { return identity() ? n : slots_[n * stride_ + t]; }

  /// New row i takes old row index[i]'s positions 0 .. filled-1 (i < rows; repeats allowed).
  void reorder(const int64_t* index, int64_t rows, int64_t filled);
  /// Position `position` of rows 0 .. rows-1 lies in cache rows 0 .. rows-1 (a step's write).
  void write(int64_t rows, int64_t position);
  /// Back to identity() (after the caches were gathered into rows of their own).
  void reset();

 private:
  std::vector<int64_t> slots_;  // [rows_, stride_]
  int64_t rows_ = 0;
  int64_t stride_ = 0;  // positions held per row
};

/// A cache view [W, H, S, Dh] -> [N, H, S, Dh] (a copy), row n holding its position s from row
/// slots.slot(n, s), N = slots.rows(): for the attention paths that read whole rows. Not identity().
torch::Tensor gather_slots(const torch::Tensor& keys, const CacheSlots& slots);

}  // namespace tfm
