#include "model/packed_weight.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <iostream>

#include "model/linear.h"
#include "model/transformer.h"
#include "runtime/capabilities.h"
#include "tests/huge_pages_support.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// float32, and bfloat16 where oneDNN computes it: an AVX2-only CPU has no packed bfloat16.
std::vector<torch::ScalarType> packable_dtypes() {
  if (cpu_has_onednn_bf16()) return {torch::kFloat32, torch::kBFloat16};
  return {torch::kFloat32};
}

// The reference is LibTorch's own linear in float64: packing may round differently, never more.
TEST(PackedWeight, ComputesTheLinearMapInFloat32AndBfloat16) {
  torch::manual_seed(3);
  const auto weight = torch::randn({40, 24});  // [out, in]
  const auto bias = torch::randn({40});
  EXPECT_EQ(PackedWeight::supported(weight.to(torch::kBFloat16)), cpu_has_onednn_bf16());
  for (const auto dtype : packable_dtypes()) {
    ASSERT_TRUE(PackedWeight::supported(weight.to(dtype)));
    const PackedWeight packed(weight.to(dtype));
    for (const auto& shape : std::vector<std::vector<int64_t>>{{1, 24}, {4, 24}, {3, 5, 24}, {70, 24}}) {
      const auto x = torch::randn(shape).to(dtype);
      const auto expected = torch::nn::functional::linear(x.to(torch::kDouble), weight.to(dtype).to(torch::kDouble),
                                                          bias.to(dtype).to(torch::kDouble));
      const double tolerance = dtype == torch::kFloat32 ? 1e-4 : 0.25;  // bf16 outputs keep 8 bits
      const auto got = packed.linear(x, bias.to(dtype));
      ASSERT_EQ(got.sizes(), expected.sizes());
      EXPECT_EQ(got.scalar_type(), dtype);
      EXPECT_TENSOR_NEAR(got.to(torch::kDouble), expected, tolerance);
      const auto no_bias = packed.linear(x);
      EXPECT_TENSOR_NEAR(no_bias.to(torch::kDouble),
                         torch::nn::functional::linear(x.to(torch::kDouble), weight.to(dtype).to(torch::kDouble)),
                         tolerance);
    }
  }
  EXPECT_FALSE(PackedWeight::supported(weight.to(torch::kDouble)));
}

TEST(PackedWeight, PadsRowCountsToAFewSizes) {
  const std::vector<int64_t> rows{1, 3, 4, 5, 8, 9, 16, 17, 20, 21, 32, 33, 40, 64, 65, 80, 128, 129, 1000};
  const std::vector<int64_t> padded{1, 3, 4, 8, 8, 12, 16, 20, 20, 24, 32, 40, 40, 64, 80, 80, 128, 160, 1024};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(PackedWeight::padded_rows(rows[i]), padded[i]) << rows[i];
  for (int64_t m = 1; m <= 5000; ++m) {
    const auto p = PackedWeight::padded_rows(m);
    ASSERT_GE(p, m);
    ASSERT_LE(p * 4, m * 5 + 12) << m;  // at most a quarter more (small counts round to 4)
  }
}

// Padding rows must not change a bit of the rows that were asked for.
TEST(PackedWeight, PaddedRowsGiveTheSameBits) {
  torch::manual_seed(4);
  const auto weight = torch::randn({72, 40});  // [out, in]
  const auto bias = torch::randn({72});
  for (const auto dtype : packable_dtypes()) {
    const PackedWeight packed(weight.to(dtype));
    for (const int64_t m : {5, 17, 33, 70, 129}) {
      const auto x = torch::randn({m, 40}).to(dtype);
      PackedWeight::set_row_padding(false);
      const auto exact = packed.linear(x, bias.to(dtype), /*relu=*/true);
      PackedWeight::set_row_padding(true);
      const auto padded = packed.linear(x.view({1, m, 40}), bias.to(dtype), /*relu=*/true);
      PackedWeight::set_row_padding(false);
      ASSERT_EQ(padded.sizes(), (std::vector<int64_t>{1, m, 72}));
      EXPECT_TRUE(torch::equal(padded.view({m, 72}), exact)) << dtype << " rows " << m;
    }
  }
}

// ReLU applied by oneDNN before the store rounds the same value that a separate ReLU would see,
// and rounding keeps the sign, so the fused form must give the very same bits.
TEST(PackedWeight, FusesTheReluBitForBit) {
  torch::manual_seed(5);
  const auto weight = torch::randn({64, 32});  // [out, in]
  const auto bias = torch::randn({64});
  const auto x = torch::randn({2, 7, 32});
  for (const auto dtype : packable_dtypes()) {
    const PackedWeight packed(weight.to(dtype));
    const auto fused = packed.linear(x.to(dtype), bias.to(dtype), /*relu=*/true);
    const auto product = packed.linear(x.to(dtype), bias.to(dtype));
    // The ReLU has something to cut and something to keep.
    EXPECT_TRUE(product.lt(0).any().item<bool>() && product.gt(0).any().item<bool>());
    const auto separate = torch::relu(product);
    EXPECT_TRUE(torch::equal(fused, separate)) << dtype;
  }
  Linear linear(LinearOptions(32, 64));
  const auto plain = torch::relu(linear(x)).detach();
  for (const auto prepare : {&LinearImpl::pack_for_inference, &LinearImpl::quantize_int8}) {
    Linear prepared(LinearOptions(32, 64));
    {
      torch::NoGradGuard no_grad;
      prepared->weight.copy_(linear->weight);
      prepared->bias.copy_(linear->bias);
    }
    ((*prepared).*prepare)();
    torch::InferenceMode inference;
    EXPECT_TRUE(torch::equal(prepared->forward_relu(x), torch::relu(prepared->forward(x))));
    EXPECT_TENSOR_NEAR(prepared->forward_relu(x), plain, 0.1);  // int8 rounds its inputs and weights
  }
}

using Compare = std::function<void(const torch::Tensor& got, const torch::Tensor& expected)>;

/// A tiny model and a copy with its weights, the copy prepared by `prepare`, decoding `source`
/// greedily for 4 steps side by side, over the whole vocabulary and over a shortlist's rows of the
/// output matrix: `compare` sees each step's log-probabilities [B, V] (or [B, V']).
void decode_side_by_side(uint64_t seed, const std::function<void(Transformer&)>& prepare, const torch::Tensor& source,
                         const Compare& compare) {
  ModelConfig config = preset("tiny");
  config.vocab_size = 50;
  torch::manual_seed(seed);
  Transformer plain(config);
  plain->eval();
  Transformer prepared(config);
  prepared->eval();
  {
    torch::NoGradGuard no_grad;
    auto target = prepared->named_parameters();
    for (const auto& item : plain->named_parameters()) target[item.key()].copy_(item.value());
  }
  prepare(prepared);
  torch::InferenceMode inference;
  auto plain_state = plain->start_decoding(plain->encode(source));
  auto prepared_state = prepared->start_decoding(prepared->encode(source));
  auto plain_short = plain->start_decoding(plain->encode(source));
  auto prepared_short = prepared->start_decoding(prepared->encode(source));
  // Every sentence's candidates: the special ids and a few others.
  const auto ids = torch::tensor(std::vector<int64_t>{0, 1, 2, 3, 9, 17, 30, 49}).expand({source.size(0), 8});
  plain->restrict_output(plain_short, ids);
  prepared->restrict_output(prepared_short, ids);
  auto tokens = torch::full({source.size(0)}, kBosId, torch::kLong);
  for (int step = 0; step < 4; ++step) {
    const auto expected = plain->step(tokens, plain_state);
    compare(prepared->step(tokens, prepared_state), expected);
    compare(prepared->step(tokens, prepared_short), plain->step(tokens, plain_short));
    tokens = expected.argmax(1);
  }
}

TEST(PackedWeight, APackedModelDecodesAsTheUnpackedOne) {
  const auto source =
      torch::tensor(std::vector<int64_t>{7, 8, 9, 10, kEosId, 11, 12, kEosId, kPadId, kPadId}).view({2, 5});
  decode_side_by_side(
      5, [](Transformer& model) { model->pack_for_inference(); }, source,
      [](const torch::Tensor& got, const torch::Tensor& expected) { EXPECT_TENSOR_NEAR(got, expected, 1e-4); });
}

// int8 prepares the output matrix too (FBGEMM, per-row scales): next-token distributions stay
// close to float32's, over the whole vocabulary and over a shortlist's candidates (scored with
// the float matrix).
TEST(PackedWeight, AnInt8ModelScoresCloseToFloat32WithItsOutputMatrixQuantized) {
  const auto source = torch::tensor(std::vector<int64_t>{7, 8, 9, 10, kEosId}).view({1, 5});
  decode_side_by_side(
      6,
      [](Transformer& model) {
        model->quantize_int8();
        model->pack_for_inference();  // leaves the int8 weights as they are
      },
      source,
      [](const torch::Tensor& got, const torch::Tensor& expected) {
        const double error = (got.exp() - expected.exp()).abs().max().item<double>();
        EXPECT_LT(error, 0.02);
        EXPECT_GT(error, 0.0) << "the int8 path did not run";
      });
}

// pack_for_inference() backs the packed weights with 2 MiB pages where Linux can: a model whose
// output matrix alone is 8 MB ([8000, 256] float32) holds at least two whole pages of it.
TEST(PackedWeight, APackedModelsWeightsLieIn2MiBPages) {
  if (!PackedWeight::supported(torch::zeros({2, 2}))) GTEST_SKIP() << "no oneDNN in this LibTorch";
  if (const auto why = testing::why_memory_cannot_collapse(); !why.empty()) GTEST_SKIP() << why;
  auto config = testing::tiny_model_config();
  config.vocab_size = 8000;
  config.d_model = 256;
  Transformer model(config);
  model->eval();
  EXPECT_EQ(model->huge_page_bytes().asked(), 0);
  model->pack_for_inference();
  const HugePageBytes bytes = model->huge_page_bytes();
  EXPECT_GE(bytes.asked(), int64_t{4} << 20);
  if (bytes.lacking_memory > 0) std::cerr << testing::lacking_memory_note(bytes.lacking_memory) << "\n";
}

}  // namespace
}  // namespace tfm
