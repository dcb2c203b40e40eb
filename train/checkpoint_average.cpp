#include "train/checkpoint_average.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include <torch/torch.h>

namespace tfm {

LoadedModel average_checkpoints(const std::vector<std::string>& paths) {
  if (paths.size() < 2) throw std::invalid_argument("averaging needs at least two checkpoints");
  auto first = load_float_model_file(paths.front(), torch::kCPU, "averaging");
  const nlohmann::json config = first.config;
  torch::NoGradGuard no_grad;
  auto params = first.model->named_parameters();
  std::vector<torch::Tensor> totals;
  for (const auto& item : params) totals.push_back(item.value().to(torch::kFloat64));
  for (size_t i = 1; i < paths.size(); ++i) {
    const auto other = load_float_model_file(paths[i], torch::kCPU, "averaging");
    if (nlohmann::json(other.config) != config) {
      throw std::invalid_argument(paths[i] + ": its architecture differs from " + paths.front() + "'s");
    }
    if (other.tokenizer_proto != first.tokenizer_proto) {
      throw std::invalid_argument(paths[i] + ": its tokenizer differs from " + paths.front() + "'s");
    }
    const auto other_params = other.model->named_parameters();
    for (size_t p = 0; p < totals.size(); ++p) totals[p] += other_params[params[p].key()].to(torch::kFloat64);
  }
  for (size_t p = 0; p < totals.size(); ++p) params[p].value().copy_(totals[p] / static_cast<double>(paths.size()));
  return first;
}

}  // namespace tfm
