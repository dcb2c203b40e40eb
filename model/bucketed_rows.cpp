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

}  // namespace tfm
