// The 16-float lanes, all three kinds (one vector of 16, two of 8, four of 4), against the scalar
// operations they stand for: same bits, lane by lane.
#include "runtime/float_lanes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tfm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bits_of(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

/// Inputs whose lanes cover the edges: 0, the -87 cut, -inf, tiny and ordinary values.
std::vector<float> exp_inputs() {
  std::vector<float> inputs = {0.0F, -0.0F, -1e-30F, -1e-7F, -0.5F, -1.0F, -86.99F, -87.0F, -87.01F, -100.0F, -kInf};
  std::mt19937 generator(7);
  std::uniform_real_distribution<float> spread(-90.0F, 0.0F);
  while (inputs.size() % kVectorLanes != 0 || inputs.size() < 4096) inputs.push_back(spread(generator));
  return inputs;
}

template <typename Lanes>
class FloatLanesTest : public ::testing::Test {};
using LaneTypes = ::testing::Types<WideLanes, SplitLanes, QuarterLanes>;
TYPED_TEST_SUITE(FloatLanesTest, LaneTypes);

TYPED_TEST(FloatLanesTest, ExpEqualsTheScalarExpBitForBitAndLibmClosely) {
  const auto inputs = exp_inputs();
  for (size_t i = 0; i < inputs.size(); i += kVectorLanes) {
    const TypeParam out = exp_nonpositive(load_lanes<TypeParam>(&inputs[i]));
    for (int64_t j = 0; j < kVectorLanes; ++j) {
      const float x = inputs[i + j];
      ASSERT_EQ(bits_of(out[j]), bits_of(exp_nonpositive(x))) << "e^" << x;
      const double expected = x < -87.0F ? 0.0 : std::exp(static_cast<double>(x));
      EXPECT_NEAR(out[j], expected, 4e-7 * expected) << "e^" << x;
    }
  }
}

TYPED_TEST(FloatLanesTest, BFloat16LoadsWidenExactly) {
  std::vector<c10::BFloat16> halves;
  for (const float x : {0.0F, -0.0F, 1.0F, -3.5F, 1e-38F, 3e38F, kInf, -kInf}) halves.emplace_back(x);
  while (halves.size() < static_cast<size_t>(kVectorLanes)) halves.emplace_back(static_cast<float>(halves.size()) / 7);
  const TypeParam wide = load_lanes<TypeParam>(halves.data());
  for (int64_t j = 0; j < kVectorLanes; ++j) EXPECT_EQ(bits_of(wide[j]), bits_of(static_cast<float>(halves[j])));
}

TYPED_TEST(FloatLanesTest, BFloat16StoresRoundAsC10Does) {
  // Exact halfway cases both ways (ties to even), values just either side, NaN, infinities.
  std::vector<float> inputs;
  for (const uint32_t bits :
       {0x3F808000U, 0x3F818000U, 0x3F808001U, 0x3F807FFFU, 0x7F7FFFFFU, 0x7FC00001U, 0xFF800001U}) {
    float x = 0.0F;
    std::memcpy(&x, &bits, sizeof x);
    inputs.push_back(x);
  }
  for (const float x : {kInf, -kInf, 0.0F, -0.0F, 1e-40F}) inputs.push_back(x);
  std::mt19937 generator(8);
  std::normal_distribution<float> normal(0.0F, 10.0F);
  while (inputs.size() % kVectorLanes != 0 || inputs.size() < 1024) inputs.push_back(normal(generator));
  std::vector<c10::BFloat16> out(inputs.size());
  for (size_t i = 0; i < inputs.size(); i += kVectorLanes) store_lanes(&out[i], load_lanes<TypeParam>(&inputs[i]));
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(out[i].x, c10::BFloat16(inputs[i]).x) << "0x" << std::hex << bits_of(inputs[i]);
  }
}

TYPED_TEST(FloatLanesTest, MaxOfLanesFindsTheLargestWherever) {
  for (int64_t lane = 0; lane < kVectorLanes; ++lane) {
    float lanes[kVectorLanes];
    std::fill(lanes, lanes + kVectorLanes, -kInf);
    lanes[lane] = 2.5F;
    lanes[(lane + 3) % kVectorLanes] = 1.0F;
    EXPECT_EQ(max_of_lanes(load_lanes<TypeParam>(lanes)), 2.5F) << "at lane " << lane;
  }
}

/// The sum of 16 lanes in the order sum_of_lanes() promises: lane j with j + 8, then + 4, + 2, + 1.
template <typename Lanes>
float pairwise_sum(const Lanes& v) {
  float partial[8];
  for (int64_t j = 0; j < 8; ++j) partial[j] = v[j] + v[j + 8];
  for (int64_t width = 4; width >= 1; width /= 2) {
    for (int64_t j = 0; j < width; ++j) partial[j] = partial[j] + partial[j + width];
  }
  return partial[0];
}

TYPED_TEST(FloatLanesTest, SumsOfLanesAddInTheirStatedOrderBitForBit) {
  // Values of many magnitudes and signs, so that a different order of additions rounds differently.
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> exponent(-20.0F, 20.0F), sign(-1.0F, 1.0F);
  for (int round = 0; round < 200; ++round) {
    TypeParam v[kVectorLanes];
    for (auto& vector : v) {
      float lanes[kVectorLanes];
      for (float& lane : lanes) lane = sign(generator) * std::exp2(exponent(generator));
      vector = load_lanes<TypeParam>(lanes);
    }
    const TypeParam sums = sums_of_lanes(v);
    for (int64_t i = 0; i < kVectorLanes; ++i) {
      ASSERT_EQ(bits_of(sum_of_lanes(v[i])), bits_of(pairwise_sum(v[i]))) << "vector " << i << ", round " << round;
      ASSERT_EQ(bits_of(sums[i]), bits_of(pairwise_sum(v[i]))) << "vector " << i << ", round " << round;
    }
  }
}

TYPED_TEST(FloatLanesTest, OperationsActLaneByLane) {
  float a[kVectorLanes], b[kVectorLanes];
  for (int64_t j = 0; j < kVectorLanes; ++j) {
    a[j] = static_cast<float>(j) - 7.5F;
    b[j] = static_cast<float>(j * j) / 16.0F;
  }
  const TypeParam x = load_lanes<TypeParam>(a), y = load_lanes<TypeParam>(b);
  const TypeParam sum = x + y, product = x * 2.0F, quotient = 1.0F / y, larger = max_lanes(x, y);
  const TypeParam chosen = where(x < y, x, y);
  const auto different = x != y;
  for (int64_t j = 0; j < kVectorLanes; ++j) {
    EXPECT_EQ(sum[j], a[j] + b[j]) << j;
    EXPECT_EQ(product[j], a[j] * 2.0F) << j;
    EXPECT_EQ(bits_of(quotient[j]), bits_of(1.0F / b[j])) << j;
    EXPECT_EQ(larger[j], std::max(a[j], b[j])) << j;
    EXPECT_EQ(chosen[j], std::min(a[j], b[j])) << j;
    EXPECT_EQ(different[j] != 0, a[j] != b[j]) << j;
  }
  float stored[kVectorLanes];
  store_lanes(stored, x);
  for (int64_t j = 0; j < kVectorLanes; ++j) EXPECT_EQ(stored[j], a[j]) << j;
}

}  // namespace
}  // namespace tfm
