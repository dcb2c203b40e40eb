#include "model/embeddings.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "model/int8_weight.h"
#include "model/linear.h"
#include "model/transformer.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

// §3.5's positions, and §3.4's shared embedding matrix: one tensor while training, and when
// decoding read from the output layer's prepared copy (packed or int8) so that it is not held twice.

namespace tfm {
namespace {

TEST(Positions, SinusoidsEqualThePapersFormula) {
  const int64_t d = 8;
  const auto table = sinusoidal_positions(0, 50, d, torch::kCPU);
  for (int64_t pos : {0, 1, 7, 49}) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / d);
      EXPECT_NEAR(table[pos][2 * i].item<double>(), std::sin(angle), 1e-6) << pos << "," << i;
      EXPECT_NEAR(table[pos][2 * i + 1].item<double>(), std::cos(angle), 1e-6) << pos << "," << i;
    }
  }
  EXPECT_TENSOR_NEAR(sinusoidal_positions(30, 5, d, torch::kCPU), table.narrow(0, 30, 5), 0.0);
}

// The embedding slices one table computed once, where it used to compute each call's positions:
// a row must have the same bits whichever rows were computed with it (the tail of a vectorised
// sin or cos could differ).
TEST(Positions, ARowOfSinusoidsHasTheSameBitsInAnyTable) {
  for (const int64_t d : {256, 512}) {
    const auto table = sinusoidal_positions(0, 512, d, torch::kCPU);
    for (int64_t first = 0; first < 400; first += 7) {
      for (const int64_t length : {1, 3, 13, 37}) {
        ASSERT_TRUE(torch::equal(sinusoidal_positions(first, length, d, torch::kCPU), table.narrow(0, first, length)))
            << "d " << d << ", positions " << first << " + " << length;
      }
    }
  }
}

// Training validates with its own model under InferenceMode, which may grow the shared table;
// the next training step must still take it (and learn through the embedding).
TEST(Positions, ATableGrownWhileDecodingServesTheNextTrainingStep) {
  Transformer model(testing::tiny_model_config());
  {
    torch::InferenceMode decoding;
    model->eval();
    model->forward(testing::random_ids(1, 5, 23, 1),
                   testing::random_ids(1, 300, 23, 2));  // grows past the first 256 rows
  }
  model->train();
  const auto logits = model->forward(testing::random_ids(2, 6, 23, 3), testing::random_ids(2, 280, 23, 4));
  logits.sum().backward();
  for (const auto& parameter : model->parameters()) ASSERT_TRUE(parameter.grad().defined());
}

TEST(TiedEmbeddings, TiedEmbeddingIsOneTensor) {
  auto model = testing::eval_model(testing::tiny_model_config());
  EXPECT_TRUE(model->source_embedding->tokens->weight.is_same(model->target_embedding->tokens->weight));
  EXPECT_FALSE(model->output_projection);
  int64_t named = 0;
  for (const auto& item : model->named_parameters()) named += item.key().find("embedding") != std::string::npos;
  EXPECT_EQ(named, 1);  // registered once, so optimizers update it once
}

/// Encodes `source` [3, S] with both models and decodes 4 steps from `kept`'s best tokens: every
/// encoding and step must have the same bits. Returns `freed`'s decoding state.
DecoderState expect_the_same_bits(Transformer& kept, Transformer& freed, const torch::Tensor& source) {
  const auto kept_encoded = kept->encode(source);
  const auto freed_encoded = freed->encode(source);
  EXPECT_TRUE(torch::equal(freed_encoded.memory, kept_encoded.memory));
  auto kept_state = kept->start_decoding(kept_encoded);
  auto freed_state = freed->start_decoding(freed_encoded);
  auto tokens = torch::full({source.size(0)}, kBosId, torch::kLong);
  for (int step = 0; step < 4; ++step) {
    const auto expected = kept->step(tokens, kept_state);  // [3, V]
    const auto got = freed->step(tokens, freed_state);
    EXPECT_TRUE(torch::equal(got, expected)) << "step " << step;
    tokens = expected.argmax(1);
    tokens.index_put_({tokens < kNumSpecialIds}, kNumSpecialIds);  // real subwords, never eos
  }
  return freed_state;
}

// A tied model whose embeddings read the packed output matrix (and whose table is freed) encodes
// and decodes with the same bits as one that keeps the table.
TEST(TiedEmbeddings, EmbeddingsFromThePackedOutputLayerKeepEveryBit) {
  torch::NoGradGuard no_grad;
  auto config = testing::tiny_model_config();
  config.vocab_size = 150;  // two full blocks of 64 rows and a partial one
  auto kept = testing::eval_model(config);
  auto freed = testing::eval_model(config);
  kept->pack_for_inference(FloatWeights::kDrop);
  freed->pack_for_inference(FloatWeights::kDrop);
  if (!freed->embed_from_output_layer()) {
    GTEST_SKIP() << "no small-row kernels on this CPU or build (LIBXSMM, AVX2): the packed copy's layout is oneDNN's "
                    "own, so the table stays";
  }
  EXPECT_EQ(freed->output_matrix().numel(), 0);
  EXPECT_EQ(freed->source_embedding->tokens->weight.numel(), 0);
  EXPECT_FALSE(freed->embed_from_output_layer());  // once

  const auto source = testing::random_ids(3, 7, config.vocab_size, 11);
  auto freed_state = expect_the_same_bits(kept, freed, source);
  // Teacher forcing (what attention pictures run) projects through the packed copy instead.
  const auto target_in = testing::random_ids(3, 5, config.vocab_size, 12);
  EXPECT_TENSOR_NEAR(freed->forward(source, target_in), kept->forward(source, target_in), 1e-4);
  EXPECT_THROW(freed->restrict_output(freed_state, torch::zeros({3, 4}, torch::kLong)), c10::Error);
}

// In int8 the embeddings read the output matrix's int8 rows, and the table is freed: a model that
// keeps its table, set to the dequantized matrix, encodes and decodes to the same bits.
TEST(TiedEmbeddings, AnInt8ModelEmbedsFromItsQuantizedOutputMatrix) {
  torch::NoGradGuard no_grad;
  auto config = testing::tiny_model_config();
  config.vocab_size = 150;
  auto kept = testing::eval_model(config);
  auto freed = testing::eval_model(config);
  const auto rows = quantize_int8_rows(kept->output_matrix());
  kept->quantize_int8(FloatWeights::kDrop, /*shortlist_rows=*/false);
  freed->quantize_int8(FloatWeights::kDrop, /*shortlist_rows=*/false);
  ASSERT_TRUE(freed->embed_from_output_layer());
  EXPECT_EQ(freed->output_matrix().numel(), 0);
  EXPECT_EQ(freed->target_embedding->tokens->weight.numel(), 0);
  // The tied table, read only by kept's embeddings now that its output layer is quantized.
  kept->source_embedding->tokens->weight.copy_(rows.values.to(torch::kFloat32) * rows.scales.unsqueeze(1));

  expect_the_same_bits(kept, freed, testing::random_ids(3, 7, config.vocab_size, 13));
}

TEST(TiedEmbeddings, AnUntiedOrUnpackedModelKeepsItsTable) {
  auto config = testing::tiny_model_config();
  auto unpacked = testing::eval_model(config);
  EXPECT_FALSE(unpacked->embed_from_output_layer());
  EXPECT_EQ(unpacked->output_matrix().size(0), config.vocab_size);
  config.tie_embeddings = false;
  auto untied = testing::eval_model(config);
  untied->pack_for_inference(FloatWeights::kDrop);
  EXPECT_FALSE(untied->embed_from_output_layer());
  EXPECT_EQ(untied->source_embedding->tokens->weight.size(0), config.vocab_size);
}

}  // namespace
}  // namespace tfm
