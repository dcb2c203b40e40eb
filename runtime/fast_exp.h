#pragma once
#include <cstdint>
#include <cstring>

#include "runtime/vector_clones.h"

namespace tfm {

/// The helpers exp_nonpositive() is written with, for one float; runtime/float_lanes.h has them
/// for WideLanes and SplitLanes.
TFM_ALWAYS_INLINE float where(bool condition, float yes, float no) { return condition ? yes : no; }
TFM_ALWAYS_INLINE int32_t to_bits(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
TFM_ALWAYS_INLINE float from_bits(int32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// e^x for x <= 0 (a softmax's x - max), to within a few float ulps (Cephes' expf polynomial),
/// written with plain arithmetic so that a loop of it vectorizes (libm's expf does not). Below
/// -87, where e^x < 2^-125, it is 0, as for -inf (a masked key). Floats: float, or 16 lanes
/// (the same operations lane by lane, so the same results).
template <typename Floats>
TFM_ALWAYS_INLINE Floats exp_nonpositive(Floats input) {
  const Floats x = where(input < -87.0F, Floats{} - 87.0F, input);
  constexpr float kRound = 12582912.0F;  // 1.5 * 2^23: adding it rounds to an integer
  const Floats shifted = x * 1.44269504F + kRound;
  const Floats n = shifted - kRound;                              // round(x / ln 2)
  const Floats f = (x - n * 0.693359375F) - n * -2.12194440e-4F;  // x - n ln 2, in two parts
  Floats p = Floats{} + 1.9875691500e-4F;
  p = p * f + 1.3981999507e-3F;
  p = p * f + 8.3334519073e-3F;
  p = p * f + 4.1665795894e-2F;
  p = p * f + 1.6666665459e-1F;
  p = p * f + 5.0000001201e-1F;
  const Floats mantissa = p * f * f + f + 1.0F;
  const Floats scale = from_bits(((to_bits(shifted) - 0x4B400000) + 127) << 23);  // 2^n, from n + 127
  return where(input < -87.0F, Floats{}, mantissa * scale);
}

}  // namespace tfm
