#include "decode/token_columns.h"

#include <torch/torch.h>

namespace tfm {

TokenColumns::TokenColumns(const torch::Tensor& ids) {
  const auto host = ids.to(torch::kCPU, torch::kLong).contiguous();
  ids_.assign(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}

}  // namespace tfm
