#include "model/bfloat16_rounding.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace tfm {
namespace {

/// The bits of bfloat16 values.
std::vector<uint16_t> bits_of(const torch::Tensor& bf16) {
  const auto* values = bf16.contiguous().data_ptr<c10::BFloat16>();
  std::vector<uint16_t> bits(static_cast<size_t>(bf16.numel()));
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = values[i].x;
  return bits;
}

TEST(Bfloat16Rounding, MatchesLibTorchsCopyBitForBit) {
  torch::manual_seed(5);
  // Ordinary values at several scales, then ties (an odd and an even kept half, exactly halfway),
  // values that round up into the next binade, subnormals, zeros and infinities; 1000 + 13 values,
  // so that the vector loop and its scalar tail both run.
  auto x = torch::cat({torch::randn({400}) * 1e-3, torch::randn({400}) * 30.0, torch::randn({200}) * 1e30});
  const std::vector<uint32_t> special = {
      0x3F808000U,  // tie, kept half even: rounds down
      0x3F818000U,  // tie, kept half odd: rounds up
      0x3F7FFFFFU,  // just below 1: rounds up to 1
      0x7F7FFFFFU,  // the largest float: rounds to infinity
      0x00000001U,  // the smallest subnormal
      0x00408000U,  // a subnormal tie
      0x80000000U,  // -0
      0x00000000U,  // +0
      0x7F800000U,  // +inf
      0xFF800000U,  // -inf
      0xBF818000U,  // a negative tie, odd: rounds away from zero
      0x3F80FFFFU,  // above the tie: rounds up
      0x3F807FFFU,  // below the tie: rounds down
  };
  std::vector<float> specials;
  for (const uint32_t b : special) {
    float f = 0;
    std::memcpy(&f, &b, sizeof f);
    specials.push_back(f);
  }
  x = torch::cat({x, torch::tensor(specials)}).contiguous();
  auto out = torch::empty({x.numel()}, torch::kBFloat16);
  round_to_bfloat16(x.data_ptr<float>(), out.data_ptr<c10::BFloat16>(), x.numel());
  EXPECT_EQ(bits_of(out), bits_of(x.to(torch::kBFloat16)));
}

TEST(Bfloat16Rounding, ANanStaysANan) {
  std::vector<float> x(21, std::numeric_limits<float>::quiet_NaN());
  x[3] = -x[3];
  std::vector<c10::BFloat16> out(x.size());
  round_to_bfloat16(x.data(), out.data(), static_cast<int64_t>(x.size()));
  for (const auto value : out) EXPECT_TRUE(std::isnan(static_cast<float>(value)));
}

}  // namespace
}  // namespace tfm
