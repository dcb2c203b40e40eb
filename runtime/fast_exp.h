#pragma once
#include <cstdint>
#include <cstring>

#include "runtime/vector_clones.h"

namespace tfm {

/// e^x for x <= 0 (a softmax's x - max), to within a few float ulps (Cephes' expf polynomial),
/// written with plain arithmetic so that a loop of it vectorizes (libm's expf does not). Below
/// -87, where e^x < 2^-125, it is 0, as for -inf (a masked key).
TFM_ALWAYS_INLINE float exp_nonpositive(float input) {
  const float x = input < -87.0F ? -87.0F : input;
  constexpr float kRound = 12582912.0F;  // 1.5 * 2^23: adding it rounds to an integer
  const float shifted = x * 1.44269504F + kRound;
  const float n = shifted - kRound;                              // round(x / ln 2)
  const float f = (x - n * 0.693359375F) - n * -2.12194440e-4F;  // x - n ln 2, in two parts
  float p = 1.9875691500e-4F;
  p = p * f + 1.3981999507e-3F;
  p = p * f + 8.3334519073e-3F;
  p = p * f + 4.1665795894e-2F;
  p = p * f + 1.6666665459e-1F;
  p = p * f + 5.0000001201e-1F;
  const float mantissa = p * f * f + f + 1.0F;
  int32_t bits = 0;
  std::memcpy(&bits, &shifted, sizeof bits);
  const int32_t exponent = (bits - 0x4B400000) + 127;  // n + 127, from shifted's low bits
  const int32_t scale_bits = exponent << 23;
  float scale = 0.0F;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return input < -87.0F ? 0.0F : mantissa * scale;
}

}  // namespace tfm
