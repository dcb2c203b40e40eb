#include "decode/attention_probe.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "model/masks.h"
#include "tests/decode/decode_test_support.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tests/translation/translation_test_support.h"
#include "text/special_ids.h"
#include "translation/translator.h"

namespace tfm {
namespace {

Transformer small_model(int64_t vocab) {
  torch::manual_seed(11);
  Transformer model(testing::tiny_config(vocab, 2, 3));
  model->eval();
  return model;
}

/// LibTorch's own MultiheadAttention with a self-attention module's weights: the reference.
torch::nn::MultiheadAttention reference_for(MultiHeadAttention& ours, int64_t d, int64_t heads) {
  torch::nn::MultiheadAttention reference(torch::nn::MultiheadAttentionOptions(d, heads));
  torch::NoGradGuard no_grad;
  reference->in_proj_weight.copy_(ours->in_proj->weight);
  reference->in_proj_bias.copy_(ours->in_proj->bias);
  reference->out_proj->weight.copy_(ours->out_proj->weight);
  reference->out_proj->bias.copy_(ours->out_proj->bias);
  reference->eval();
  return reference;
}

/// The head-averaged weights [T, T] LibTorch computes for x [1, T, D] (blocked: additive [T, T] or undefined).
torch::Tensor reference_weights(torch::nn::MultiheadAttention& reference, const torch::Tensor& x,
                                const torch::Tensor& blocked) {
  const auto seq_first = x.transpose(0, 1);  // [T, 1, D]
  return std::get<1>(reference->forward(seq_first, seq_first, seq_first, {}, /*need_weights=*/true, blocked))[0];
}

struct Probed {
  Tokenizer tokenizer = testing::number_phrase_tokenizer();
  Transformer model = small_model(tokenizer.vocab_size());
  std::vector<int64_t> source = tokenizer.encode("two cats und three dogs .");
  std::vector<int64_t> hypothesis = tokenizer.encode("zwei Katzen drei");
  SentenceAttention attention =
      labelled_attention(tokenizer, source, hypothesis, probe_attention(model, source, hypothesis, torch::kCPU));
};

TEST(AttentionProbe, ShapesAndLabelsFollowTheSentencePair) {
  Probed p;
  const auto S = static_cast<int64_t>(p.source.size()) + 1, T = static_cast<int64_t>(p.hypothesis.size()) + 1;
  ASSERT_EQ(p.attention.maps.encoder_self.size(), 2u);
  ASSERT_EQ(p.attention.maps.decoder_self.size(), 3u);
  ASSERT_EQ(p.attention.maps.cross.size(), 3u);
  EXPECT_EQ(p.attention.maps.encoder_self[0].sizes(), (std::vector<int64_t>{2, S, S}));
  EXPECT_EQ(p.attention.maps.decoder_self[2].sizes(), (std::vector<int64_t>{2, T, T}));
  EXPECT_EQ(p.attention.maps.cross[1].sizes(), (std::vector<int64_t>{2, T, S}));
  EXPECT_EQ(p.attention.source_pieces.back(), p.tokenizer.id_to_piece(kEosId));
  EXPECT_EQ(p.attention.target_inputs.front(), p.tokenizer.id_to_piece(kBosId));
  EXPECT_EQ(p.attention.target_outputs.back(), p.tokenizer.id_to_piece(kEosId));
  EXPECT_EQ(p.attention.target_outputs.front(), p.tokenizer.id_to_piece(p.hypothesis.front()));
}

TEST(AttentionProbe, RowsSumToOneAndFuturePositionsGetNothing) {
  Probed p;
  for (const auto* layers : {&p.attention.maps.encoder_self, &p.attention.maps.decoder_self, &p.attention.maps.cross}) {
    for (const auto& weights : *layers) {
      EXPECT_TRUE(torch::allclose(weights.sum(-1), torch::ones({weights.size(0), weights.size(1)}), 1e-5, 1e-6));
      EXPECT_GE(weights.min().item<float>(), 0.0f);
    }
  }
  for (const auto& weights : p.attention.maps.decoder_self) {
    EXPECT_EQ(weights.triu(1).abs().max().item<float>(), 0.0f) << "a decoder position saw a later one";
  }
}

TEST(AttentionProbe, WeightsEqualLibTorchsMultiheadAttentionOnTheSameInputs) {
  Probed p;
  torch::NoGradGuard no_grad;
  const auto d = p.model->config().d_model, heads = p.model->config().heads;
  // Encoder layer 1 (post-norm) reads the embedded source.
  std::vector<int64_t> source = p.source;
  source.push_back(kEosId);
  const auto embedded_source = p.model->source_embedding(torch::tensor(source).view({1, -1}));
  auto encoder_layer = p.model->encoder->layers->ptr<EncoderLayerImpl>(0);
  auto encoder_reference = reference_for(encoder_layer->self_attention, d, heads);
  EXPECT_TENSOR_NEAR(p.attention.maps.encoder_self[0].mean(0),
                     reference_weights(encoder_reference, embedded_source, torch::Tensor()), 1e-5);
  // Decoder layer 1's masked self-attention reads the embedded <s> + hypothesis.
  std::vector<int64_t> target_in{kBosId};
  target_in.insert(target_in.end(), p.hypothesis.begin(), p.hypothesis.end());
  const auto T = static_cast<int64_t>(target_in.size());
  const auto embedded_target = p.model->target_embedding(torch::tensor(target_in).view({1, -1}));
  const auto blocked = torch::zeros({T, T}).masked_fill(causal_mask(T, torch::kCPU).view({T, T}).logical_not(),
                                                        -std::numeric_limits<float>::infinity());
  auto decoder_layer = p.model->decoder->layers->ptr<DecoderLayerImpl>(0);
  auto decoder_reference = reference_for(decoder_layer->self_attention, d, heads);
  EXPECT_TENSOR_NEAR(p.attention.maps.decoder_self[0].mean(0),
                     reference_weights(decoder_reference, embedded_target, blocked), 1e-5);
}

TEST(AttentionProbe, TheTranslatorProbesTheHypothesisItDecoded) {
  Probed p;
  TranslatorOptions options;
  options.search.max_len_a = 0;
  options.search.max_len_b = 5;
  Translator translator({p.model}, p.tokenizer, options, torch::kCPU);
  const auto translations = translator.translate({"two cats und three dogs ."});
  ASSERT_FALSE(translations[0].nbest.empty());
  const auto& best = translations[0].nbest.front();
  const auto attention = translator.attention(translations[0]);
  EXPECT_EQ(translations[0].source_ids, p.source);
  ASSERT_EQ(attention.target_outputs.size(), best.pieces.size() + 1);
  for (size_t i = 0; i < best.pieces.size(); ++i) EXPECT_EQ(attention.target_outputs[i], best.pieces[i]);
  const auto direct = probe_attention(p.model, p.source, best.ids, torch::kCPU);
  for (size_t l = 0; l < direct.cross.size(); ++l) EXPECT_TENSOR_NEAR(attention.maps.cross[l], direct.cross[l], 1e-6);
}

TEST(Alignment, EachTargetSubwordLinksToItsMostAttendedSourceSubword) {
  // Source "a b c </s>", hypothesis "x y </s>".
  AttentionMaps a;
  // Layer 0 says x->c, y->a; layer 1 says x->b, y->b; </s> column and row never count.
  const auto layer0 = torch::tensor({{0.1f, 0.2f, 0.6f, 0.1f}, {0.5f, 0.1f, 0.1f, 0.3f}, {0.f, 0.f, 0.f, 1.f}});
  const auto layer1 = torch::tensor({{0.1f, 0.5f, 0.1f, 0.3f}, {0.2f, 0.4f, 0.1f, 0.3f}, {0.9f, 0.f, 0.f, 0.1f}});
  // Two heads each: averaging the same head twice leaves the layer's weights.
  a.cross = {torch::stack({layer0, layer0}), torch::stack({layer1, layer1})};
  EXPECT_EQ(hard_alignment(a, 0), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(hard_alignment(a, -1), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(hard_alignment(a, -2), (std::vector<int64_t>{2, 0}));  // last but one
  EXPECT_EQ(soft_alignment(a, 1).sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(resolve_layer(-2, 1), 0);
  EXPECT_EQ(resolve_layer(5, 3), 2);
}

}  // namespace
}  // namespace tfm
