#include "model/embeddings.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "model/dropout.h"
#include "text/special_ids.h"

namespace tfm {

torch::Tensor sinusoidal_positions(int64_t first, int64_t length, int64_t d_model, const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  const auto position = torch::arange(first, first + length, options).unsqueeze(1);         // [T, 1]
  const auto two_i = torch::arange(0, d_model, 2, options);                                 // [D/2]
  const auto angle = position / torch::pow(10000.0, two_i / static_cast<double>(d_model));  // [T, D/2]
  // Interleave: even columns sin, odd columns cos. Computed in float64 so large positions keep precision.
  return torch::stack({torch::sin(angle), torch::cos(angle)}, -1).view({length, d_model}).to(torch::kFloat32);
}

torch::nn::Embedding make_token_embedding(int64_t vocab_size, int64_t d_model) {
  torch::nn::Embedding embedding(torch::nn::EmbeddingOptions(vocab_size, d_model).padding_idx(kPadId));
  torch::NoGradGuard no_grad;
  embedding->weight.normal_(0.0, std::pow(static_cast<double>(d_model), -0.5));
  embedding->weight[kPadId].zero_();
  return embedding;
}

TokenAndPositionImpl::TokenAndPositionImpl(const ModelConfig& config, torch::nn::Embedding tokens_)
    : tokens(std::move(tokens_)), config_(config), scale_(std::sqrt(static_cast<double>(config.d_model))) {
  if (config.positions == PositionEncoding::kLearned) {
    positions = register_module("positions", torch::nn::Embedding(config.max_positions, config.d_model));
    torch::NoGradGuard no_grad;
    positions->weight.normal_(0.0, std::pow(static_cast<double>(config.d_model), -0.5));
  }
}

torch::Tensor TokenAndPositionImpl::forward(const torch::Tensor& ids, int64_t first_position) {
  const int64_t length = ids.size(1);
  torch::Tensor position_vectors;  // [T, D]
  if (config_.positions == PositionEncoding::kSinusoidal) {
    position_vectors = sinusoidal_positions(first_position, length, config_.d_model, ids.device());
  } else {
    if (first_position + length > config_.max_positions) {
      throw std::invalid_argument("sequence of " + std::to_string(first_position + length) +
                                  " positions exceeds the model's learned maximum of " +
                                  std::to_string(config_.max_positions));
    }
    position_vectors = positions->weight.narrow(0, first_position, length);
  }
  const auto token_vectors = tokens(ids) * scale_;  // [B, T, D]
  const auto embedded = token_vectors + position_vectors.to(token_vectors.scalar_type());
  return apply_dropout(embedded, config_.dropout, is_training());
}

}  // namespace tfm
