#include "model/layer_norm_kernel.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tfm {
namespace {

class LayerNormKernel : public ::testing::TestWithParam<torch::ScalarType> {};

// The kernel LibTorch's LayerNorm runs, without the op: its bits for any leading shape, into a
// new tensor or over x itself.
TEST_P(LayerNormKernel, GivesLibTorchsBitsIntoANewTensorOrOverItsInput) {
  if (!layer_norm_kernel_available()) GTEST_SKIP() << "not an x86-64 build: LayerNorm goes through its op";
  torch::manual_seed(3);
  torch::NoGradGuard no_grad;
  const auto dtype = GetParam();
  const auto weight = torch::rand({256}).add(0.5).to(dtype), bias = torch::randn({256}).to(dtype);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 256}, {3, 5, 256}, {1, 256}}) {
    const auto x = (torch::randn(shape) * 3 + 1).to(dtype);
    const auto expected = torch::layer_norm(x, {256}, weight, bias, 1e-5);
    auto out = torch::empty_like(x);
    layer_norm_kernel(x, weight, bias, 1e-5, out);
    EXPECT_TRUE(torch::equal(out, expected)) << x.sizes();
    auto in_place = x.clone();
    layer_norm_kernel(in_place, weight, bias, 1e-5, in_place);
    EXPECT_TRUE(torch::equal(in_place, expected)) << x.sizes();
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormKernel, ::testing::Values(torch::kFloat32, torch::kBFloat16));

TEST(LayerNormKernelArguments, RefusesMixedDtypesAndStridedRows) {
  if (!layer_norm_kernel_available()) GTEST_SKIP() << "not an x86-64 build";
  const auto weight = torch::ones({8}), bias = torch::zeros({8});
  auto out = torch::empty({2, 8});
  EXPECT_THROW(layer_norm_kernel(torch::zeros({2, 8}, torch::kBFloat16), weight, bias, 1e-5, out), c10::Error);
  EXPECT_THROW(layer_norm_kernel(torch::zeros({8, 2}).t(), weight, bias, 1e-5, out), c10::Error);
  EXPECT_THROW(layer_norm_kernel(torch::zeros({2, 4}), weight, bias, 1e-5, out), c10::Error);
}

}  // namespace
}  // namespace tfm
