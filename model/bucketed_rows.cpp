#include "model/bucketed_rows.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace tfm {

int64_t bucketed_row_count(int64_t rows) {
  int64_t step = 1;
  while (rows > 32 * step) step *= 2;
  return (rows + step - 1) / step * step;
}

bool buckets_product_rows(const torch::Tensor& x) {
  return x.is_cpu() && at::autocast::is_autocast_enabled(at::kCPU) &&
         at::autocast::get_autocast_dtype(at::kCPU) == at::kBFloat16;
}

torch::Tensor linear_over_bucketed_rows(const torch::Tensor& x, const torch::Tensor& weight,
                                        const torch::Tensor& bias) {
  const int64_t in = x.size(-1), rows = x.numel() / in, padded = bucketed_row_count(rows);
  if (padded == rows) return torch::linear(x, weight, bias);
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  const auto padded_x = at::constant_pad_nd(x.reshape({rows, in}), {0, 0, 0, padded - rows});  // [padded, in]
  return torch::linear(padded_x, weight, bias).narrow(0, 0, rows).view(sizes);
}

}  // namespace tfm
