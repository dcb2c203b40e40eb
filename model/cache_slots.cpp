#include "model/cache_slots.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace tfm {
namespace {

/// Positions held per row are multiples of this: the table grows once every 16 steps.
constexpr int64_t kPositionQuantum = 16;

int64_t stride_for(int64_t positions) {
  return (positions + kPositionQuantum - 1) / kPositionQuantum * kPositionQuantum;
}

}  // namespace

void CacheSlots::reorder(const int64_t* index, int64_t rows, int64_t filled) {
  const int64_t stride = std::max(stride_, stride_for(filled + 1));
  std::vector<int64_t> slots(rows * stride);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t* to = slots.data() + i * stride;
    if (identity()) {
      std::fill_n(to, filled, index[i]);
    } else {
      std::copy_n(row(index[i]), filled, to);
    }
  }
  slots_ = std::move(slots);
  rows_ = rows;
  stride_ = stride;
}

void CacheSlots::write(int64_t rows, int64_t position) {
  if (identity()) return;
  if (rows != rows_) {
    throw std::invalid_argument("CacheSlots::write: " + std::to_string(rows) + " rows, the table has " +
                                std::to_string(rows_));
  }
  if (position >= stride_) {
    const int64_t stride = stride_for(position + 1);
    std::vector<int64_t> slots(rows_ * stride);
    for (int64_t n = 0; n < rows_; ++n) std::copy_n(row(n), stride_, slots.data() + n * stride);
    slots_ = std::move(slots);
    stride_ = stride;
  }
  for (int64_t n = 0; n < rows; ++n) slots_[n * stride_ + position] = n;
}

void CacheSlots::reset() {
  slots_.clear();
  rows_ = 0;
  stride_ = 0;
}

torch::Tensor gather_slots(const torch::Tensor& keys, const CacheSlots& slots) {
  TORCH_CHECK(!slots.identity() && keys.dim() == 4, "gather_slots: a table and a 4-d cache view");
  const int64_t rows = slots.rows(), positions = keys.size(2);
  auto table = torch::empty({rows, 1, positions}, torch::kLong);  // [N, 1, S]
  for (int64_t n = 0; n < rows; ++n) std::copy_n(slots.row(n), positions, table.data_ptr<int64_t>() + n * positions);
  const auto options = torch::TensorOptions(torch::kLong).device(keys.device());
  const auto heads = torch::arange(keys.size(1), options).view({1, -1, 1});
  const auto steps = torch::arange(positions, options).view({1, 1, -1});
  return keys.index({table.to(keys.device()), heads, steps});  // [N, H, S, Dh]
}

}  // namespace tfm
