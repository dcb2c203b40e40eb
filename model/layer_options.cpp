#include "model/layer_options.h"

namespace tfm {

MultiHeadAttentionOptions self_attention_options(const ModelConfig& config) {
  return MultiHeadAttentionOptions(config.d_model, config.heads)
      .dropout(config.attention_dropout)
      .score(config.score)
      .self_attention(true);
}

MultiHeadAttentionOptions cross_attention_options(const ModelConfig& config) {
  return self_attention_options(config).self_attention(false);
}

FeedForwardOptions feed_forward_options(const ModelConfig& config) {
  return FeedForwardOptions(config.d_model, config.d_ff).relu_dropout(config.relu_dropout);
}

}  // namespace tfm
