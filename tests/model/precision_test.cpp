#include "runtime/precision.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/transformer.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

ModelConfig config() {
  ModelConfig c;
  c.vocab_size = 31;
  c.d_model = 32;
  c.d_ff = 64;
  c.heads = 4;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  return c;
}

TEST(Precision, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_precision("bf16"), Precision::kBFloat16);
  EXPECT_EQ(parse_precision("float32"), Precision::kFloat32);
  EXPECT_THROW(parse_precision("int8"), std::invalid_argument);
  EXPECT_THROW(check_supported(Precision::kFloat16, torch::kCPU), std::invalid_argument);
  EXPECT_NO_THROW(check_supported(Precision::kBFloat16, torch::kCPU));
}

TEST(Precision, BFloat16AutocastStaysCloseToFloat32) {
  torch::manual_seed(11);
  Transformer model(config());
  model->eval();
  const auto source = torch::randint(kNumSpecialIds, 31, {2, 7}, torch::kLong);
  const auto target = torch::randint(kNumSpecialIds, 31, {2, 5}, torch::kLong);
  const auto reference = torch::log_softmax(model->forward(source, target), -1);
  torch::Tensor mixed;
  {
    AutocastGuard autocast(torch::kCPU, Precision::kBFloat16);
    mixed = model->forward(source, target);
    EXPECT_EQ(mixed.scalar_type(), torch::kBFloat16);  // the output projection ran in bf16
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));  // the guard restored the state
  // bf16 keeps 8 bits of mantissa: log-probabilities agree to a few hundredths.
  EXPECT_TENSOR_NEAR(torch::log_softmax(mixed.to(torch::kFloat32), -1), reference, 0.1);
}

TEST(Precision, BFloat16WeightsDecodeIncrementally) {
  torch::manual_seed(12);
  Transformer model(config());
  model->eval();
  const auto source = torch::randint(kNumSpecialIds, 31, {2, 6}, torch::kLong);
  auto state32 = model->start_decoding(model->encode(source));
  const auto bos = torch::full({2}, kBosId, torch::kLong);
  const auto reference = model->step(bos, state32);
  model->to(torch::kBFloat16);
  auto state16 = model->start_decoding(model->encode(source));
  const auto step = model->step(bos, state16);
  EXPECT_EQ(step.scalar_type(), torch::kFloat32);  // log-probabilities always float32
  EXPECT_TENSOR_NEAR(step, reference, 0.1);
}

}  // namespace
}  // namespace tfm
