#include "model/tensor_bytes.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>

#include <ATen/Context.h>

namespace tfm {
namespace {

TEST(TensorBytes, ReadsStridedAndMkldnnTensors) {
  const auto dense = torch::arange(24, torch::kFloat32).view({4, 6});
  const auto strided = tensor_bytes(dense);
  EXPECT_EQ(strided.data, dense.data_ptr());
  EXPECT_EQ(strided.size, 24 * 4);
  EXPECT_EQ(tensor_bytes(dense.t()).data, nullptr);  // not contiguous: no plain byte order
  EXPECT_EQ(tensor_bytes(torch::Tensor()).data, nullptr);
  if (!at::hasMKLDNN()) GTEST_SKIP() << "LibTorch built without oneDNN";
  const auto opaque = dense.to_mkldnn();  // no storage: data_ptr() would throw
  const auto bytes = tensor_bytes(opaque);
  ASSERT_NE(bytes.data, nullptr);
  ASSERT_EQ(bytes.size, 24 * 4);
  EXPECT_EQ(std::memcmp(bytes.data, dense.data_ptr(), 24 * 4), 0);  // a plain [4, 6] oneDNN tensor
}

}  // namespace
}  // namespace tfm
