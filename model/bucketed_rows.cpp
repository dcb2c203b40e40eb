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

namespace {

/// Whether autocast on the CPU casts x for a lower-precision op: a floating tensor other than float64.
bool autocast_would_cast(const torch::Tensor& x) {
  return at::autocast::is_autocast_enabled(at::kCPU) && x.is_floating_point() && x.scalar_type() != torch::kFloat64;
}

}  // namespace

torch::Tensor linear_over_bucketed_rows(const torch::Tensor& x, const torch::Tensor& weight,
                                        const torch::Tensor& bias) {
  const int64_t in = x.size(-1), rows = x.numel() / in, padded = bucketed_row_count(rows);
  if (padded == rows) return torch::linear(x, weight, bias);
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  // Cast as autocast would, but before padding, so that the padded copy is made in bfloat16 and
  // only its added rows are written as zeros.
  auto x_rows = x.reshape({rows, in});  // [rows, in]
  if (autocast_would_cast(x_rows)) x_rows = x_rows.to(at::autocast::get_autocast_dtype(at::kCPU));
  const auto padded_x = torch::cat({x_rows, torch::zeros({padded - rows, in}, x_rows.options())});  // [padded, in]
  return torch::linear(padded_x, weight, bias).narrow(0, 0, rows).view(sizes);
}

}  // namespace tfm
