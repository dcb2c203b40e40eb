#include "model/encoder.h"

#include <torch/torch.h>

#include "model/layer_options.h"
#include "model/masks.h"

namespace tfm {

torch::nn::LayerNorm make_layer_norm(int64_t d_model) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}));
}

EncoderLayerImpl::EncoderLayerImpl(const ModelConfig& config) : config_(config) {
  self_attention = register_module("self_attention", MultiHeadAttention(self_attention_options(config)));
  feed_forward = register_module("feed_forward", FeedForward(feed_forward_options(config)));
  self_attention_norm = register_module("self_attention_norm", make_layer_norm(config.d_model));
  feed_forward_norm = register_module("feed_forward_norm", make_layer_norm(config.d_model));
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights) {
  auto h = residual(x, self_attention_norm, config_, is_training(),
                    [&](const torch::Tensor& in) { return self_attention->forward(in, mask, weights); });
  return residual(h, feed_forward_norm, config_, is_training(),
                  [&](const torch::Tensor& in) { return feed_forward->forward(in); });
}

EncoderImpl::EncoderImpl(const ModelConfig& config) : config_(config) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.encoder_layers; ++i) layers->push_back(EncoderLayer(config));
  if (config.norm == NormPlacement::kPre) final_norm = register_module("final_norm", make_layer_norm(config.d_model));
}

torch::Tensor EncoderImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                   std::vector<torch::Tensor>* weights) {
  auto self_mask = mask;  // [B, 1, 1, S]
  if (config_.attention_window > 0) {
    self_mask = mask & window_mask(x.size(1), x.size(1), config_.attention_window, 0, x.device());
  }
  auto h = x;
  for (const auto& layer : *layers) {
    torch::Tensor layer_weights;
    h = layer->as<EncoderLayer>()->forward(h, self_mask, weights != nullptr ? &layer_weights : nullptr);
    if (weights != nullptr) weights->push_back(layer_weights);
  }
  return final_norm ? layer_norm_rows(final_norm, h) : h;
}

}  // namespace tfm
