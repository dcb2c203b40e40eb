#include "model/linear.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

TEST(Linear, InitialisesAndComputesAsLibTorchLinear) {
  torch::manual_seed(7);
  Linear ours(LinearOptions(12, 5));
  torch::manual_seed(7);
  torch::nn::Linear reference(12, 5);
  EXPECT_TENSOR_NEAR(ours->weight, reference->weight, 0.0);
  EXPECT_TENSOR_NEAR(ours->bias, reference->bias, 0.0);
  const auto x = torch::randn({3, 4, 12});
  EXPECT_TENSOR_NEAR(ours(x), reference(x), 1e-6);
  // Same parameter names as torch::nn::Linear, so model files are unchanged.
  EXPECT_EQ(ours->named_parameters().keys(), reference->named_parameters().keys());
}

TEST(Linear, Int8IsCloseToFloat32) {
  torch::manual_seed(8);
  Linear layer(LinearOptions(256, 96));
  const auto x = torch::randn({2, 40, 256});
  const auto expected = layer(x);
  layer->quantize_int8();
  ASSERT_TRUE(layer->is_quantized());
  const auto got = layer(x);
  ASSERT_EQ(got.sizes(), expected.sizes());
  const double relative = ((got - expected).abs().max() / expected.abs().max()).item<double>();
  std::cout << "int8 vs float32: max error " << relative << " of the largest output\n";
  EXPECT_LT(relative, 0.03);
  EXPECT_GT(relative, 0.0) << "the int8 path did not run";
}

TEST(Linear, Int8NeedsFloat32OnTheCpu) {
  Linear layer(LinearOptions(8, 8));
  layer->to(torch::kBFloat16);
  EXPECT_THROW(layer->quantize_int8(), std::invalid_argument);
}

TEST(Linear, APreparedLayerComputesTheSameAfterItsFloatWeightIsDropped) {
  torch::manual_seed(9);
  const auto x = torch::randn({3, 64});
  for (const auto prepare : {&LinearImpl::pack_for_inference, &LinearImpl::quantize_int8}) {
    Linear layer(LinearOptions(64, 48));
    EXPECT_THROW(layer->drop_float_weight(), c10::Error) << "not prepared yet";
    ((*layer).*prepare)();
    ASSERT_TRUE(layer->is_packed() || layer->is_quantized());
    torch::InferenceMode inference;
    const auto before = layer(x);
    drop_float_weights_of_prepared_layers(*layer);
    EXPECT_EQ(layer->weight.numel(), 0);
    EXPECT_EQ(layer->named_parameters()["weight"].numel(), 0) << "the module's parameter is the same tensor";
    EXPECT_TRUE(torch::equal(layer(x), before));
  }
}

}  // namespace
}  // namespace tfm
