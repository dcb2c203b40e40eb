#include "model/packed_weight.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/linear.h"
#include "model/transformer.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

// The reference is LibTorch's own linear in float64: packing may round differently, never more.
TEST(PackedWeight, ComputesTheLinearMapInFloat32AndBfloat16) {
  torch::manual_seed(3);
  const auto weight = torch::randn({40, 24});  // [out, in]
  const auto bias = torch::randn({40});
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
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

TEST(PackedWeight, APackedModelDecodesAsTheUnpackedOne) {
  ModelConfig config = preset("tiny");
  config.vocab_size = 50;
  torch::manual_seed(5);
  Transformer plain(config);
  plain->eval();
  Transformer packed(config);
  packed->eval();
  {
    torch::NoGradGuard no_grad;
    auto target = packed->named_parameters();
    for (const auto& item : plain->named_parameters()) target[item.key()].copy_(item.value());
  }
  packed->pack_for_inference();
  torch::InferenceMode inference;
  const auto source =
      torch::tensor(std::vector<int64_t>{7, 8, 9, 10, kEosId, 11, 12, kEosId, kPadId, kPadId}).view({2, 5});
  auto plain_state = plain->start_decoding(plain->encode(source));
  auto packed_state = packed->start_decoding(packed->encode(source));
  // And over a shortlist's rows of the output matrix.
  auto plain_short = plain->start_decoding(plain->encode(source));
  auto packed_short = packed->start_decoding(packed->encode(source));
  const auto ids = torch::tensor(std::vector<int64_t>{0, 1, 2, 3, 9, 17, 30, 49});
  plain->restrict_output(plain_short, ids);
  packed->restrict_output(packed_short, ids);
  auto tokens = torch::full({2}, kBosId, torch::kLong);
  for (int step = 0; step < 4; ++step) {
    const auto expected = plain->step(tokens, plain_state);  // [2, V]
    EXPECT_TENSOR_NEAR(packed->step(tokens, packed_state), expected, 1e-4);
    EXPECT_TENSOR_NEAR(packed->step(tokens, packed_short), plain->step(tokens, plain_short), 1e-4);
    tokens = expected.argmax(1);
  }
}

// int8 prepares the output matrix too (FBGEMM, per-row scales): next-token distributions stay
// close to float32's, over the whole vocabulary and over a shortlist's rows.
TEST(PackedWeight, AnInt8ModelScoresCloseToFloat32WithItsOutputMatrixQuantized) {
  ModelConfig config = preset("tiny");
  config.vocab_size = 50;
  torch::manual_seed(6);
  Transformer plain(config);
  plain->eval();
  Transformer quantized(config);
  quantized->eval();
  {
    torch::NoGradGuard no_grad;
    auto target = quantized->named_parameters();
    for (const auto& item : plain->named_parameters()) target[item.key()].copy_(item.value());
  }
  quantized->quantize_int8();
  quantized->pack_for_inference();  // leaves the int8 weights as they are
  torch::InferenceMode inference;
  const auto source = torch::tensor(std::vector<int64_t>{7, 8, 9, 10, kEosId}).view({1, 5});
  auto plain_state = plain->start_decoding(plain->encode(source));
  auto int8_state = quantized->start_decoding(quantized->encode(source));
  auto plain_short = plain->start_decoding(plain->encode(source));
  auto int8_short = quantized->start_decoding(quantized->encode(source));
  const auto ids = torch::tensor(std::vector<int64_t>{0, 1, 2, 3, 9, 17, 30, 49});
  plain->restrict_output(plain_short, ids);
  quantized->restrict_output(int8_short, ids);
  auto tokens = torch::full({1}, kBosId, torch::kLong);
  for (int step = 0; step < 4; ++step) {
    const auto expected = plain->step(tokens, plain_state).exp();  // [1, V]
    const auto got = quantized->step(tokens, int8_state).exp();
    const double error = (got - expected).abs().max().item<double>();
    EXPECT_LT(error, 0.02) << "step " << step;
    EXPECT_GT(error, 0.0) << "the int8 path did not run";
    EXPECT_LT(
        (quantized->step(tokens, int8_short).exp() - plain->step(tokens, plain_short).exp()).abs().max().item<double>(),
        0.02);
    tokens = expected.argmax(1);
  }
}

}  // namespace
}  // namespace tfm
