#pragma once
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/attention.h"
#include "model/feed_forward.h"
#include "model/layer_norm_rows.h"
#include "model/model_config.h"
#include "model/residual_dropout.h"
#include "model/residual_dropout_layer_norm.h"

namespace tfm {

/// x + Dropout(Sublayer(x)) with LayerNorm after (post-norm, §3.1, §5.4) or before the sub-layer (pre-norm).
template <typename Sublayer>
torch::Tensor residual(const torch::Tensor& x, torch::nn::LayerNorm& norm, const ModelConfig& config, bool training,
                       Sublayer&& sublayer) {
  if (config.norm == NormPlacement::kPre) {
    if (!training) return residual_sum_rows(x, sublayer(layer_norm_rows(norm, x)));
    return residual_dropout(x, sublayer(layer_norm_rows(norm, x)), config.dropout, training);
  }
  // At inference the sum is written over the sub-layer's fresh output, and normalized there.
  if (!training) return residual_layer_norm_rows(norm, x, sublayer(x));
  return residual_dropout_layer_norm(norm, x, sublayer(x), config.dropout, training);
}

/// §3.1: one encoder layer, self-attention then feed-forward.
class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const ModelConfig& config);
  /// x: [B, S, D], mask: broadcastable to [B, H, S, S] -> [B, S, D]; with `weights`, the
  /// self-attention weights [B, H, S, S] are stored there.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights = nullptr);

  MultiHeadAttention self_attention{nullptr};
  FeedForward feed_forward{nullptr};
  torch::nn::LayerNorm self_attention_norm{nullptr};
  torch::nn::LayerNorm feed_forward_norm{nullptr};

 private:
  ModelConfig config_;
};
TORCH_MODULE(EncoderLayer);

/// §3.1: a stack of N encoder layers (plus a final LayerNorm with pre-norm).
class EncoderImpl : public torch::nn::Module {
 public:
  explicit EncoderImpl(const ModelConfig& config);
  /// x: embedded source [B, S, D], mask: [B, 1, 1, S] -> [B, S, D]; with `weights`, each layer's
  /// self-attention weights [B, H, S, S] are appended there.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask,
                        std::vector<torch::Tensor>* weights = nullptr);

  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};  // pre-norm only

 private:
  ModelConfig config_;
};
TORCH_MODULE(Encoder);

/// LayerNorm over the last dimension of size d_model.
torch::nn::LayerNorm make_layer_norm(int64_t d_model);

}  // namespace tfm
