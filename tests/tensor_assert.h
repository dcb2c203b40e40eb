#pragma once
// expect_tensor_near: compares shapes first, then values, and reports the largest difference and where.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

namespace tfm::testing {

inline ::testing::AssertionResult tensors_near(const torch::Tensor& actual, const torch::Tensor& expected,
                                               double atol) {
  if (actual.sizes() != expected.sizes()) {
    std::ostringstream message;
    message << "shape " << actual.sizes() << " != expected " << expected.sizes();
    return ::testing::AssertionFailure() << message.str();
  }
  const auto difference = (actual.to(torch::kFloat64) - expected.to(torch::kFloat64)).abs();
  if (difference.numel() == 0) return ::testing::AssertionSuccess();
  if (difference.isnan().any().item<bool>()) return ::testing::AssertionFailure() << "NaN in the difference";
  const auto flat_index = difference.argmax().item<int64_t>();
  const double max_difference = difference.max().item<double>();
  if (max_difference <= atol) return ::testing::AssertionSuccess() << "max difference " << max_difference;
  std::ostringstream where;
  where << "max difference " << max_difference << " > " << atol << " at flat index " << flat_index << " (actual "
        << actual.flatten()[flat_index].item<double>() << ", expected " << expected.flatten()[flat_index].item<double>()
        << ")";
  return ::testing::AssertionFailure() << where.str();
}

}  // namespace tfm::testing

#define EXPECT_TENSOR_NEAR(actual, expected, atol) \
  EXPECT_TRUE(::tfm::testing::tensors_near((actual), (expected), (atol)))
#define ASSERT_TENSOR_NEAR(actual, expected, atol) \
  ASSERT_TRUE(::tfm::testing::tensors_near((actual), (expected), (atol)))
