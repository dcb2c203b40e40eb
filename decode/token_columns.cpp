#include "decode/token_columns.h"

#include <algorithm>
#include <stdexcept>

#include <torch/torch.h>

namespace tfm {

TokenColumns::TokenColumns(torch::Tensor lists, int64_t rows_per_list)
    : lists_(lists.to(torch::kCPU, torch::kLong).contiguous()), rows_per_list_(rows_per_list) {
  if (lists_.dim() != 2 || rows_per_list_ < 1)
    throw std::invalid_argument("TokenColumns: [M, C] lists, rows per list >= 1");
  width_ = lists_.size(1);
}

int64_t TokenColumns::column(int64_t row, int64_t token) const {
  if (!lists_.defined()) return token;
  const int64_t* begin = list(row);
  const int64_t* end = begin + width_;
  // Padding (-1) sorts after every id.
  const auto found =
      std::lower_bound(begin, end, token, [](int64_t id, int64_t wanted) { return id >= 0 && id < wanted; });
  return found != end && *found == token ? static_cast<int64_t>(found - begin) : -1;
}

}  // namespace tfm
