#pragma once
// NumPy's default random generator, numpy.random.default_rng(seed), reproduced draw for draw so
// that tfm's resamples are sacreBLEU's: SeedSequence hashes the seed into a PCG64 state (XSL-RR
// output, 128-bit LCG), and bounded integers come from Lemire's multiply-shift on 32-bit halves.
#include <cstdint>

namespace tfm {

// PCG64's 128-bit state; __extension__ keeps -Wpedantic quiet about the GCC/Clang type.
__extension__ using Uint128 = unsigned __int128;

class NumpyRandom {
 public:
  /// As numpy.random.default_rng(seed) for a non-negative integer seed.
  explicit NumpyRandom(uint64_t seed);
  /// The next 64 output bits (BitGenerator.random_raw()).
  uint64_t next64();
  /// A uniform integer in [0, n), 1 <= n <= 2^32, drawn as Generator.integers(0, n) and
  /// Generator.choice(n, replace=True) draw it.
  uint32_t below(uint64_t n);

 private:
  uint32_t next32();  // the low half of a 64-bit draw, then its high half
  void step();

  Uint128 state_ = 0;
  Uint128 increment_ = 0;
  uint32_t spare_half_ = 0;
  bool has_spare_half_ = false;
};

}  // namespace tfm
