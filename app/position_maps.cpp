#include "app/position_maps.h"

#include <torch/torch.h>

#include "app/tensor_matrix.h"
#include "model/embeddings.h"

namespace tfm {
PositionMaps position_maps(Transformer& model, int64_t positions) {
  torch::NoGradGuard no_grad;
  PositionMaps maps;
  maps.d_model = model->config().d_model;
  auto learned = model->source_embedding->positions;
  maps.sinusoidal = !learned;
  torch::Tensor encoding;  // [P, D]
  if (maps.sinusoidal) {
    encoding = sinusoidal_positions(0, positions, maps.d_model, torch::kCPU);
  } else {
    const auto table = learned->weight.to(torch::kCPU, torch::kFloat32);
    encoding = table.slice(0, 0, std::min(positions, table.size(0)));
  }
  // PE(p) . PE(q) = sum_i cos(w_i (p - q)) for sinusoids: a function of p - q alone, which is why
  // attending by relative position is easy (§3.5). Its largest value, d_model / 2, is at p = q.
  const auto dot = torch::matmul(encoding, encoding.t());
  maps.dot = to_matrix(dot / dot.abs().max().clamp_min(1e-12));
  maps.encoding = to_matrix(maps.sinusoidal ? encoding : encoding / encoding.abs().max().clamp_min(1e-12));
  return maps;
}

}  // namespace tfm
