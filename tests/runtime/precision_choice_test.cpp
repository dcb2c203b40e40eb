#include <gtest/gtest.h>

#include "runtime/precision.h"

namespace tfm {
namespace {

const torch::Device kCpu(torch::kCPU);
const torch::Device kCuda(torch::kCUDA, 0);  // only a value here: nothing runs on it

TEST(ChoosePrecision, AutoPicksBfloat16OnlyWhereItIsNative) {
  struct Case {
    torch::Device device;
    PrecisionSupport support;
    Precision expected;
  };
  const std::vector<Case> cases = {
      {kCpu, {false, false}, Precision::kFloat32},  {kCpu, {true, false}, Precision::kBFloat16},
      {kCpu, {false, true}, Precision::kFloat32},   {kCpu, {true, true}, Precision::kBFloat16},
      {kCuda, {false, false}, Precision::kFloat32}, {kCuda, {true, false}, Precision::kFloat32},
      {kCuda, {false, true}, Precision::kBFloat16}, {kCuda, {true, true}, Precision::kBFloat16},
  };
  for (const auto& c : cases) {
    const auto choice = choose_precision("auto", c.device, c.support);
    SCOPED_TRACE(c.device.str() + " cpu_bf16 " + std::to_string(c.support.cpu_bf16_native) + " cuda_bf16 " +
                 std::to_string(c.support.cuda_bf16));
    EXPECT_EQ(choice.precision, c.expected);
    EXPECT_NE(choice.reason.find("auto"), std::string::npos) << choice.reason;
    EXPECT_NE(choice.reason.find(to_string(c.expected)), std::string::npos) << choice.reason;
    EXPECT_TRUE(choice.warning.empty()) << "auto never picks a slow precision";
  }
}

TEST(ChoosePrecision, ACpuWithAmxButNoUsableTilesGetsFloat32AndSaysWhy) {
  const PrecisionSupport withheld{false, false, true};
  const auto automatic = choose_precision("auto", kCpu, withheld);
  EXPECT_EQ(automatic.precision, Precision::kFloat32);
  EXPECT_NE(automatic.reason.find("AMX tiles are not usable"), std::string::npos) << automatic.reason;
  const auto asked = choose_precision("bfloat16", kCpu, withheld);
  EXPECT_EQ(asked.precision, Precision::kBFloat16);
  EXPECT_NE(asked.warning.find("AMX tiles are not usable"), std::string::npos) << asked.warning;
  EXPECT_EQ(asked.warning.find("emulates"), std::string::npos) << asked.warning;
}

TEST(ChoosePrecision, ExplicitChoicesRunAsAskedAndWarnWhenEmulated) {
  const auto emulated = choose_precision("bfloat16", kCpu, {false, false});
  EXPECT_EQ(emulated.precision, Precision::kBFloat16);
  EXPECT_NE(emulated.warning.find("3x slower"), std::string::npos) << emulated.warning;
  EXPECT_NE(emulated.warning.find("dtype auto"), std::string::npos) << emulated.warning;
  EXPECT_TRUE(choose_precision("bf16", kCpu, {true, false}).warning.empty());
  EXPECT_FALSE(choose_precision("bfloat16", kCuda, {true, false}).warning.empty());
  EXPECT_TRUE(choose_precision("bfloat16", kCuda, {false, true}).warning.empty());
  const auto fp32 = choose_precision("float32", kCpu, {true, true});
  EXPECT_EQ(fp32.precision, Precision::kFloat32);
  EXPECT_TRUE(fp32.warning.empty());
  EXPECT_EQ(choose_precision("float16", kCuda, {false, true}).precision, Precision::kFloat16);
  EXPECT_THROW(choose_precision("float16", kCpu, {true, true}), std::invalid_argument);
  EXPECT_THROW(choose_precision("half-ish", kCpu, {true, true}), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
