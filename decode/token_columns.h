#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Which token each column of a step's log-probabilities stands for, row by row: the whole
/// vocabulary in order (column = token id), or under a shortlist each sentence's own sorted
/// candidates, where the special ids keep their columns (every list starts with them, so the
/// logits processors address them as usual) and columns past a list's end are padding.
class TokenColumns {
 public:
  TokenColumns() = default;
  /// lists: [M, C] int64 on the CPU, each sorted ascending and then -1 up to C
  /// (Shortlist::candidates); row r of a step's scores has list r / rows_per_list.
  TokenColumns(torch::Tensor lists, int64_t rows_per_list);

  bool is_identity() const { return !lists_.defined(); }
  /// The token of `column` in `row`, or -1 where the column is padding.
  int64_t token(int64_t row, int64_t column) const { return lists_.defined() ? list(row)[column] : column; }
  /// The column of `token` in `row`, or -1 where the row's list leaves it out.
  int64_t column(int64_t row, int64_t token) const;

 private:
  const int64_t* list(int64_t row) const { return lists_.data_ptr<int64_t>() + row / rows_per_list_ * width_; }

  torch::Tensor lists_;
  int64_t rows_per_list_ = 1;
  int64_t width_ = 0;
};

}  // namespace tfm
