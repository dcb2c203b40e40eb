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
    layer->drop_float_weight();
    EXPECT_EQ(layer->weight.numel(), 0);
    EXPECT_EQ(layer->named_parameters()["weight"].numel(), 0) << "the module's parameter is the same tensor";
    EXPECT_TRUE(torch::equal(layer(x), before));
  }
}

// Preparing a module's layers with FloatWeights::kDrop frees each float weight and computes what
// the same layers prepared with their float weights kept compute.
TEST(Linear, LayersPreparedWithFloatWeightsDroppedComputeTheSame) {
  using Prepare = void (*)(torch::nn::Module&, FloatWeights);
  for (const Prepare prepare : {Prepare(&pack_linear_layers), Prepare(&quantize_linear_layers_int8)}) {
    torch::manual_seed(11);
    torch::nn::Sequential kept(Linear(LinearOptions(64, 48)), Linear(LinearOptions(48, 32)));
    torch::nn::Sequential dropped(Linear(LinearOptions(64, 48)), Linear(LinearOptions(48, 32)));
    {
      torch::NoGradGuard no_grad;
      for (const auto& item : dropped->named_parameters()) item.value().copy_(kept->named_parameters()[item.key()]);
    }
    prepare(*kept, FloatWeights::kKeep);
    prepare(*dropped, FloatWeights::kDrop);
    torch::InferenceMode inference;
    const auto x = torch::randn({5, 64});
    for (const auto& module : dropped->children()) {
      EXPECT_EQ(module->as<LinearImpl>()->weight.numel(), 0);
    }
    for (const auto& module : kept->children()) {
      EXPECT_EQ(module->as<LinearImpl>()->weight.numel(),
                module->as<LinearImpl>()->options.in_features() * module->as<LinearImpl>()->options.out_features());
    }
    EXPECT_TRUE(torch::equal(dropped->forward(x), kept->forward(x)));
  }
}

}  // namespace
}  // namespace tfm
