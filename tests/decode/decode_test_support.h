#pragma once
// Shared by the decoding tests: untrained models and source batches.
#include <algorithm>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/transformer.h"
#include "tests/test_support.h"
#include "text/special_ids.h"

namespace tfm::testing {

/// A model config small enough for any test: d_model 16, d_ff 32, 2 heads.
inline ModelConfig tiny_config(int64_t vocab, int64_t encoder_layers, int64_t decoder_layers) {
  ModelConfig config;
  config.vocab_size = vocab;
  config.d_model = 16;
  config.d_ff = 32;
  config.heads = 2;
  config.encoder_layers = encoder_layers;
  config.decoder_layers = decoder_layers;
  return config;
}

/// An untrained model with sharp distributions over `vocab` tokens.
inline Transformer random_model(int64_t vocab, int64_t seed) {
  const ModelConfig config = tiny_config(vocab, 1, 2);
  torch::manual_seed(seed);
  Transformer model(config);
  model->eval();
  {
    // Sharper distributions than the initialisation gives, so searches differ from each other.
    torch::NoGradGuard no_grad;
    model->target_embedding->tokens->weight.mul_(4.0);
  }
  return model;
}

inline torch::Tensor source_for(const std::vector<int64_t>& tokens) {
  auto with_eos = tokens;
  with_eos.push_back(kEosId);
  return torch::tensor(with_eos, torch::kLong).view({1, -1});
}

/// Sentences as one padded, eos-terminated batch [B, S]; `lengths` gets their subword counts.
inline torch::Tensor batch_of(const std::vector<std::vector<int64_t>>& sentences, std::vector<int64_t>& lengths) {
  int64_t longest = 0;
  for (const auto& s : sentences) longest = std::max<int64_t>(longest, static_cast<int64_t>(s.size()) + 1);
  auto batch = torch::full({static_cast<int64_t>(sentences.size()), longest}, kPadId, torch::kLong);
  for (size_t b = 0; b < sentences.size(); ++b) {
    batch[b].narrow(0, 0, static_cast<int64_t>(sentences[b].size()) + 1).copy_(source_for(sentences[b])[0]);
    lengths.push_back(static_cast<int64_t>(sentences[b].size()));
  }
  return batch;
}

}  // namespace tfm::testing
