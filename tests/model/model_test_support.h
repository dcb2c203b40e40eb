#pragma once
// Shared by the model tests: a tiny configuration, random token ids, an untrained model, and the
// fixture that runs a test on both kernel paths.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/model_config.h"
#include "model/transformer.h"
#include "runtime/kernels.h"
#include "text/special_ids.h"

namespace tfm::testing {

/// Small enough for any test: vocabulary 23, d_model 16, d_ff 32, 4 heads, 2 + 2 layers.
inline ModelConfig tiny_model_config() {
  ModelConfig config;
  config.vocab_size = 23;
  config.d_model = 16;
  config.d_ff = 32;
  config.heads = 4;
  config.encoder_layers = 2;
  config.decoder_layers = 2;
  return config;
}

/// Random real tokens (ids >= 4) [batch, length], row b > 0 padded in its last b positions.
inline torch::Tensor random_ids(int64_t batch, int64_t length, int64_t vocab, int64_t seed) {
  torch::manual_seed(seed);
  auto ids = torch::randint(kNumSpecialIds, vocab, {batch, length}, torch::kLong);
  for (int64_t b = 1; b < batch; ++b) ids.index_put_({b, torch::indexing::Slice(length - b)}, kPadId);
  return ids;
}

/// An untrained model of `config` in evaluation mode, its weights drawn from `seed`.
inline Transformer eval_model(const ModelConfig& config, int64_t seed = 7) {
  torch::manual_seed(seed);
  Transformer model(config);
  model->eval();
  return model;
}

/// The variants incremental decoding must handle alike: pre-norm, a local attention window, learned
/// positions (untied), each on tiny_model_config().
inline std::vector<ModelConfig> decoding_variants() {
  auto pre_norm = tiny_model_config();
  pre_norm.norm = NormPlacement::kPre;
  auto windowed = tiny_model_config();
  windowed.attention_window = 2;
  auto learned = tiny_model_config();
  learned.positions = PositionEncoding::kLearned;
  learned.max_positions = 16;
  learned.tie_embeddings = false;
  return {pre_norm, windowed, learned};
}

/// Runs a TEST_P body with fused kernels on, then off (the plain reference path), restoring the
/// default. Instantiate with INSTANTIATE_BOTH_KERNELS(Fixture).
class BothKernelsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { set_fused_kernels(GetParam()); }
  void TearDown() override { set_fused_kernels(true); }
};

inline std::string kernels_name(const ::testing::TestParamInfo<bool>& kernels) {
  return kernels.param ? "fused" : "plain";
}

}  // namespace tfm::testing

#define INSTANTIATE_BOTH_KERNELS(fixture) \
  INSTANTIATE_TEST_SUITE_P(Kernels, fixture, ::testing::Values(true, false), ::tfm::testing::kernels_name)
