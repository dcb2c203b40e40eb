#include "app/tensor_matrix.h"

namespace tfm {

Matrix to_matrix(const torch::Tensor& tensor) {
  const auto t = tensor.to(torch::kCPU, torch::kFloat32).contiguous();  // [rows, cols]
  Matrix m;
  m.rows = t.size(0);
  m.cols = t.size(1);
  m.values.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  return m;
}

}  // namespace tfm
