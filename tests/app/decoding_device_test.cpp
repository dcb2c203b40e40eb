#include <gtest/gtest.h>

#include "app/runtime_options.h"

namespace tfm {
namespace {

RuntimeOptions device_flag(const std::string& device) {
  RuntimeOptions options;
  options.device = device;
  return options;
}

// The CUDA devices here are values only: nothing runs on them.
TEST(DecodingDevice, AutoTakesAnInt8ModelToTheCpuWhereCudaIsUsable) {
  const torch::Device cuda(torch::kCUDA, 0);
  EXPECT_EQ(decoding_device(device_flag("auto"), cuda, /*int8=*/true), torch::Device(torch::kCPU));
  EXPECT_EQ(decoding_device(device_flag("auto"), cuda, /*int8=*/false), cuda);
  EXPECT_EQ(decoding_device(device_flag("auto"), torch::kCPU, /*int8=*/false), torch::Device(torch::kCPU));
}

TEST(DecodingDevice, ANamedDeviceStaysForTheInt8PathToRefuse) {
  const torch::Device cuda1(torch::kCUDA, 1);
  EXPECT_EQ(decoding_device(device_flag("cuda:1"), cuda1, /*int8=*/true), cuda1);
  EXPECT_EQ(decoding_device(device_flag("cpu"), torch::kCPU, /*int8=*/true), torch::Device(torch::kCPU));
}

}  // namespace
}  // namespace tfm
