#include "model/transformer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>

#include "model/length_chunks.h"
#include "model/model_config.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

// The model as a whole: causal, blind to padding, incremental decoding equal to teacher forcing,
// and the paper's parameter count. Decoding states: decoder_state_test.cpp; embeddings and
// positions: embeddings_test.cpp; the loss: loss_test.cpp.

namespace tfm {
namespace {

/// §3.2.3: the decoder output at position t depends on target tokens <= t only.
TEST(Transformer, DecoderIsCausal) {
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(2, 6, 23, 1);
  auto target = testing::random_ids(2, 7, 23, 2).fill_(5);
  const auto before = model->forward(source, target);
  for (int64_t t = 0; t < 6; ++t) {
    auto changed = target.clone();
    changed.index_put_({torch::indexing::Slice(), torch::indexing::Slice(t + 1)}, 9);
    const auto after = model->forward(source, changed);
    EXPECT_TENSOR_NEAR(after.narrow(1, 0, t + 1), before.narrow(1, 0, t + 1), 1e-6) << "t=" << t;
    EXPECT_FALSE(torch::allclose(after.narrow(1, t + 1, 1), before.narrow(1, t + 1, 1)));
  }
}

TEST(Transformer, PaddingDoesNotChangeRealPositions) {
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(1, 5, 23, 3);
  const auto target = testing::random_ids(1, 4, 23, 4);
  const auto reference = model->forward(source, target);
  const auto padded_source = torch::cat({source, torch::full({1, 3}, kPadId, torch::kLong)}, 1);
  const auto padded_target = torch::cat({target, torch::full({1, 2}, kPadId, torch::kLong)}, 1);
  EXPECT_TENSOR_NEAR(model->forward(padded_source, target), reference, 1e-5);
  EXPECT_TENSOR_NEAR(model->forward(source, padded_target).narrow(1, 0, 4), reference, 1e-5);
}

TEST(Transformer, EncodingInLengthChunksEqualsEachSentenceAlone) {
  // One long sentence among short ones: outside training encode() parts the batch by length
  // (model/length_chunks.h), and each sentence's memory must still be its own, unpadded.
  auto model = testing::eval_model(testing::tiny_model_config());
  const int64_t rows = 30, longest = 300;
  auto source = testing::random_ids(rows, longest, 23, 11);
  for (int64_t b = 0; b < rows; ++b) {
    if (b != 4) source[b].narrow(0, 3 + b % 5, longest - 3 - b % 5).fill_(kPadId);
  }
  const auto encoded = model->encode(source);  // [B, S, D]
  ASSERT_GT(length_chunks(mask_lengths(encoded.mask)).size(), 1U);
  const auto whole = model->encoder->forward(model->source_embedding(source), encoded.mask);  // unparted
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t length = mask_lengths(encoded.mask.narrow(0, b, 1)).front();
    const auto alone = model->encode(source.narrow(0, b, 1).narrow(1, 0, length)).memory[0];  // [L, D]
    ASSERT_TENSOR_NEAR(encoded.memory[b].narrow(0, 0, length), alone, 1e-5) << "sentence " << b;
    ASSERT_TENSOR_NEAR(encoded.memory[b].narrow(0, 0, length), whole[b].narrow(0, 0, length), 1e-5) << "sentence " << b;
  }
}

/// Step-by-step decoding with the cache equals the teacher-forced forward pass (within
/// `tolerance`; with `cache_dtype`, the caches are stored in it).
void expect_incremental_equals_full(const ModelConfig& config, double tolerance = 1e-5,
                                    std::optional<torch::Dtype> cache_dtype = std::nullopt) {
  auto model = testing::eval_model(config);
  model->set_cache_dtype(cache_dtype);
  const auto source = testing::random_ids(3, 6, config.vocab_size, 5);
  auto target = testing::random_ids(3, 5, config.vocab_size, 6);
  target.index_put_({torch::indexing::Slice(), 0}, kBosId);
  target.index_put_({torch::indexing::Slice(1), torch::indexing::Slice(3)}, 7);  // no pads in the target prefix
  const auto full = torch::log_softmax(model->forward(source, target), -1);      // [B, T, V]
  // With autograd on, steps take LibTorch's matmul attention; outside it (decoding), step_attention.
  for (const bool grad : {true, false}) {
    torch::AutoGradMode mode(grad);
    auto state = model->start_decoding(model->encode(source));
    for (int64_t t = 0; t < target.size(1); ++t) {
      const auto step = model->step(target.select(1, t), state);  // [B, V]
      ASSERT_TENSOR_NEAR(step, full.select(1, t), tolerance) << "step " << t << (grad ? "" : " outside autograd");
    }
    EXPECT_EQ(state.step, target.size(1));
    const auto stored = cache_dtype.value_or(torch::kFloat32);
    EXPECT_EQ(state.layers.front().self_k.scalar_type(), stored);
    EXPECT_EQ(state.layers.back().memory_v.scalar_type(), stored);
  }
}

TEST(Transformer, IncrementalDecodingEqualsFullForward) {
  expect_incremental_equals_full(testing::tiny_model_config());
}

TEST(Transformer, IncrementalDecodingEqualsFullForwardWithVariants) {
  for (const auto& config : testing::decoding_variants()) expect_incremental_equals_full(config);
  for (const auto score : {AttentionScore::kGeneral, AttentionScore::kAdditive, AttentionScore::kCosine}) {
    auto scored = testing::tiny_model_config();
    scored.score = score;
    expect_incremental_equals_full(scored);
  }
}

TEST(Transformer, IncrementalDecodingWithABFloat16CacheStaysCloseToFullForward) {
  // Keys and values rounded to 8 bits of mantissa move log-probabilities by up to 6e-3 here; a
  // cache read wrongly (a position or head off) would move them by whole units.
  expect_incremental_equals_full(testing::tiny_model_config(), 2e-2, torch::kBFloat16);
}

int64_t count_parameters(Transformer& model) {
  int64_t total = 0;
  for (const auto& p : model->parameters()) total += p.numel();
  return total;
}

// Base model, shared 37000-subword vocabulary, tied embeddings (§3.4, §5.1):
//   embedding          37000 * 512                                   = 18,944,000
//   attention          4 * (512 * 512 + 512)                          =  1,050,624
//   feed-forward       512 * 2048 + 2048 + 2048 * 512 + 512           =  2,099,712
//   encoder layer      attention + FFN + 2 LayerNorms (2 * 1024)      =  3,152,384   x 6 = 18,914,304
//   decoder layer      2 attentions + FFN + 3 LayerNorms (3 * 1024)   =  4,204,032   x 6 = 25,224,192
//   total (output projection tied, no bias)                           = 63,082,496  (the paper: "65M")
TEST(Transformer, BaseModelHasThePapersParameterCount) {
  auto config = preset("base");
  config.vocab_size = 37000;
  Transformer model(config);
  EXPECT_EQ(count_parameters(model), 63082496);
  config.tie_embeddings = false;  // + source and target embeddings and the projection separately
  Transformer untied(config);
  EXPECT_EQ(count_parameters(untied), 63082496 + 2 * 18944000);
}

}  // namespace
}  // namespace tfm
