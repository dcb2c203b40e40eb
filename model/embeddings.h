#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/blocked_rows.h"
#include "model/model_config.h"

namespace tfm {

/// §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).
/// Positions first .. first+length-1 -> [length, d_model] (float32, on `device`).
torch::Tensor sinusoidal_positions(int64_t first, int64_t length, int64_t d_model, const torch::Device& device);

/// §3.4 and §3.5: token embeddings scaled by sqrt(d_model) plus positions, then dropout.
/// The token matrix may be shared with other embeddings and the output projection (§3.4), so
/// its owner registers it; this module only uses it (a matrix registered twice would be counted
/// and updated twice).
class TokenAndPositionImpl : public torch::nn::Module {
 public:
  TokenAndPositionImpl(const ModelConfig& config, torch::nn::Embedding tokens);
  /// ids: [B, T]; positions start at `first_position` (> 0 in incremental decoding) -> [B, T, D]
  torch::Tensor forward(const torch::Tensor& ids, int64_t first_position = 0);
  /// One token per row at a position of its own (rows of a decoding batch that began at different
  /// steps). ids: [N, 1], row_positions: N entries -> [N, 1, D]
  torch::Tensor forward_at(const torch::Tensor& ids, const std::vector<int64_t>& row_positions);
  /// Inference from now on reads the tokens' rows from `rows` (the tied output matrix's packed
  /// copy: TransformerImpl::embed_from_output_layer), not from `tokens`, which may then be freed.
  void read_tokens_from(const BlockedRows& rows) { blocked_tokens_ = rows; }

  torch::nn::Embedding tokens{nullptr};     // [V, D], registered by the owner, possibly shared
  torch::nn::Embedding positions{nullptr};  // learned positions only: [max_positions, D]

 private:
  /// Positions first .. first+length-1 -> [length, D] float32 (sinusoids or the learned table)
  torch::Tensor position_table(int64_t first, int64_t length, const torch::Device& device) const;
  /// Sinusoids of positions 0 .. at least `end`-1, computed once and grown by doubling: a decoding
  /// step would otherwise spend ten ops on one row. A row depends on its position alone, so a
  /// slice has the bits sinusoidal_positions() gives.
  torch::Tensor sinusoid_rows(int64_t end, const torch::Device& device) const;
  /// tokens(ids) * scale + the rows of `position_vectors` that `rows` name, in one pass where it
  /// can be (embed_rows) -> [ids..., D]; nullopt where LibTorch's ops must compute it.
  std::optional<torch::Tensor> embed_in_one_pass(const torch::Tensor& ids, const torch::Tensor& position_vectors,
                                                 const std::vector<int64_t>& rows) const;
  ModelConfig config_;
  double scale_;
  std::optional<BlockedRows> blocked_tokens_;  // set by read_tokens_from()
  // Shared by copies of the module and by the threads translating with it (tfm serve).
  struct SinusoidCache {
    std::mutex mutex;
    torch::Tensor table;  // [P, D] float32
  };
  std::shared_ptr<SinusoidCache> sinusoids_ = std::make_shared<SinusoidCache>();
};
TORCH_MODULE(TokenAndPosition);

/// A [V, D] embedding initialised N(0, D^-1/2) (so scaled embeddings have unit variance),
/// with the padding row zero and kept out of the gradient.
torch::nn::Embedding make_token_embedding(int64_t vocab_size, int64_t d_model);

}  // namespace tfm
