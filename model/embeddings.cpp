#include "model/embeddings.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "model/dropout.h"
#include "model/embedding_rows.h"
#include "model/parameter_init.h"
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

namespace {

/// A table of [rows, d_model] drawn from N(0, d_model^-0.5), or left uninitialised under
/// SkipParameterInit: LibTorch's Embedding draws N(0, 1) for itself unless it is handed a weight.
torch::nn::Embedding embedding_table(torch::nn::EmbeddingOptions options) {
  if (parameter_init_skipped()) {
    return torch::nn::Embedding(options._weight(torch::empty({options.num_embeddings(), options.embedding_dim()})));
  }
  torch::nn::Embedding embedding(options);  // its own N(0, 1) draw kept: training's later draws keep their bits
  torch::NoGradGuard no_grad;
  embedding->weight.normal_(0.0, std::pow(static_cast<double>(options.embedding_dim()), -0.5));
  return embedding;
}

}  // namespace

torch::nn::Embedding make_token_embedding(int64_t vocab_size, int64_t d_model) {
  auto embedding = embedding_table(torch::nn::EmbeddingOptions(vocab_size, d_model).padding_idx(kPadId));
  if (parameter_init_skipped()) return embedding;
  torch::NoGradGuard no_grad;
  embedding->weight[kPadId].zero_();
  return embedding;
}

TokenAndPositionImpl::TokenAndPositionImpl(const ModelConfig& config, torch::nn::Embedding tokens_)
    : tokens(std::move(tokens_)), config_(config), scale_(std::sqrt(static_cast<double>(config.d_model))) {
  if (config.positions == PositionEncoding::kLearned) {
    positions = register_module("positions",
                                embedding_table(torch::nn::EmbeddingOptions(config.max_positions, config.d_model)));
  }
}

torch::Tensor TokenAndPositionImpl::position_table(int64_t first, int64_t length, const torch::Device& device) const {
  if (config_.positions == PositionEncoding::kSinusoidal)
    return sinusoid_rows(first + length, device).narrow(0, first, length);
  if (first + length > config_.max_positions) {
    throw std::invalid_argument("sequence of " + std::to_string(first + length) +
                                " positions exceeds the model's learned maximum of " +
                                std::to_string(config_.max_positions));
  }
  return positions->weight.narrow(0, first, length);
}

torch::Tensor TokenAndPositionImpl::sinusoid_rows(int64_t end, const torch::Device& device) const {
  const std::lock_guard<std::mutex> lock(sinusoids_->mutex);
  auto& table = sinusoids_->table;
  if (!table.defined() || table.size(0) < end || table.device() != device) {
    const int64_t rows = std::max<int64_t>({end, 256, table.defined() ? 2 * table.size(0) : 0});
    table = sinusoidal_positions(0, rows, config_.d_model, device);
  }
  return table;
}

std::optional<torch::Tensor> TokenAndPositionImpl::embed_in_one_pass(const torch::Tensor& ids,
                                                                     const torch::Tensor& position_vectors,
                                                                     const std::vector<int64_t>& rows) const {
  if (is_training()) return std::nullopt;
  if (blocked_tokens_) {
    // `tokens` may have been freed: these rows are the only ones left.
    const auto id_rows = ids.contiguous();                     // a length chunk's rows are a view
    const auto position_rows = position_vectors.contiguous();  // [P, D]
    TORCH_CHECK(embed_rows_fit(*blocked_tokens_, id_rows, position_rows),
                "TokenAndPosition: its tokens are read from a packed CPU matrix, which these ids (", ids.scalar_type(),
                " on ", ids.device(), ") cannot use");
    return embed_rows(*blocked_tokens_, id_rows, scale_, position_rows, rows);
  }
  if (!embed_rows_fit(tokens->weight, ids, position_vectors)) return std::nullopt;
  return embed_rows(tokens->weight, ids, scale_, position_vectors, rows);
}

torch::Tensor TokenAndPositionImpl::forward(const torch::Tensor& ids, int64_t first_position) {
  const auto position_vectors = position_table(first_position, ids.size(1), ids.device());  // [T, D]
  if (!is_training()) {
    std::vector<int64_t> rows(ids.numel());
    for (size_t n = 0; n < rows.size(); ++n) rows[n] = static_cast<int64_t>(n) % ids.size(1);  // (b, t) -> t
    if (auto embedded = embed_in_one_pass(ids, position_vectors, rows)) return *embedded;
  }
  const auto token_vectors = tokens(ids) * scale_;  // [B, T, D]
  const auto embedded = token_vectors + position_vectors.to(token_vectors.scalar_type());
  return apply_dropout(embedded, config_.dropout, is_training());
}

torch::Tensor TokenAndPositionImpl::forward_at(const torch::Tensor& ids, const std::vector<int64_t>& row_positions) {
  TORCH_CHECK(ids.dim() == 2 && ids.size(1) == 1 && ids.size(0) == static_cast<int64_t>(row_positions.size()),
              "forward_at: one token and one position per row");
  const auto [lowest, highest] = std::minmax_element(row_positions.begin(), row_positions.end());
  // Each position's vector is computed as forward() computes it, so a row's embedding has the
  // same bits whichever batch it is decoded in.
  const auto table = position_table(*lowest, *highest - *lowest + 1, ids.device());  // [P, D]
  std::vector<int64_t> rows(row_positions);  // each row's position as a row of `table`
  for (auto& row : rows) row -= *lowest;
  if (auto embedded = embed_in_one_pass(ids, table, rows)) return *embedded;
  const auto position_vectors =
      table.index_select(0, torch::tensor(rows, torch::kLong).to(ids.device())).unsqueeze(1);  // [N, 1, D]
  const auto token_vectors = tokens(ids) * scale_;                                             // [N, 1, D]
  const auto embedded = token_vectors + position_vectors.to(token_vectors.scalar_type());
  return apply_dropout(embedded, config_.dropout, is_training());
}

}  // namespace tfm
