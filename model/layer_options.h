#pragma once
// The one place where a ModelConfig becomes the options of each layer (as Marian's and
// LibTorch's modules take them): layers never read the config's fields themselves.
#include "model/attention.h"
#include "model/feed_forward.h"
#include "model/model_config.h"

namespace tfm {

/// Encoder and decoder self-attention: one fused [3D, D] Q/K/V projection.
MultiHeadAttentionOptions self_attention_options(const ModelConfig& config);
/// Encoder-decoder attention: Q from the decoder, K and V from the encoder output.
MultiHeadAttentionOptions cross_attention_options(const ModelConfig& config);
FeedForwardOptions feed_forward_options(const ModelConfig& config);

}  // namespace tfm
