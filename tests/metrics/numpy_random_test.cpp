#include "metrics/numpy_random.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "metrics/paired_bootstrap.h"

namespace tfm {
namespace {

// Expected values printed by NumPy 2.4.6:
//   np.random.default_rng(seed).choice(n, size=12)   and   .bit_generator.random_raw(3)

std::vector<uint32_t> draws(uint64_t seed, uint64_t n) {
  NumpyRandom random(seed);
  std::vector<uint32_t> out;
  for (int i = 0; i < 12; ++i) out.push_back(random.below(n));
  return out;
}

TEST(NumpyRandom, RawOutputIsNumpysPcg64SeededBySeedSequence) {
  NumpyRandom random(12345);
  EXPECT_EQ(random.next64(), 0x3a32b18db2ffc19dULL);
  EXPECT_EQ(random.next64(), 0x51171315c9e4c4deULL);
  EXPECT_EQ(random.next64(), 0xcc2024823444efd9ULL);
}

TEST(NumpyRandom, ChoiceWithReplacementDrawsNumpysIndices) {
  EXPECT_EQ(draws(12345, 1000), (std::vector<uint32_t>{699, 227, 788, 316, 204, 797, 642, 676, 988, 391, 839, 332}));
  EXPECT_EQ(draws(12345, 3), (std::vector<uint32_t>{2, 0, 2, 0, 0, 2, 1, 2, 2, 1, 2, 0}));
  EXPECT_EQ(draws(0, 1000), (std::vector<uint32_t>{850, 636, 511, 269, 307, 40, 75, 16, 175, 813, 649, 912}));
  EXPECT_EQ(draws(0, 3), (std::vector<uint32_t>{2, 1, 1, 0, 0, 0, 0, 0, 0, 2, 1, 2}));
  // A seed of two 32-bit words.
  EXPECT_EQ(draws(1099511627783ULL, 1000),
            (std::vector<uint32_t>{206, 829, 609, 255, 17, 153, 504, 674, 885, 738, 94, 489}));
}

TEST(NumpyRandom, RangesNearTwoToThe32RedrawLikeNumpy) {
  // Lemire's method rejects ~30% of draws at this range: the redraws must match NumPy's too.
  EXPECT_EQ(draws(12345, 3000000000ULL),
            (std::vector<uint32_t>{2097645094, 682008066, 2365940964, 950275018, 2392096371, 2028764011, 2518275128,
                                   1794926260, 639429039, 560202556, 687406213, 2018268131}));
  EXPECT_EQ(draws(0, 3000000000ULL),
            (std::vector<uint32_t>{2551872677, 1910885061, 1533409439, 809360140, 923488268, 122920571, 225720425,
                                   49582906, 525801878, 2439810717, 1948247248, 2738266731}));
}

TEST(NumpyRandom, ARangeOfOneValueDrawsNothing) {
  NumpyRandom random(12345);
  EXPECT_EQ(random.below(1), 0U);
  EXPECT_EQ(random.below(1000), 699U);  // the stream is where it started
  EXPECT_THROW(random.below(0), std::invalid_argument);
}

TEST(NumpySum, SumsPairwiseAsNumpyDoes) {
  // np.sum(np.float32(1) / np.arange(1, n + 1, dtype=np.float32)); a sequential float sum differs.
  const auto harmonic = [](int64_t n) {
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = 1.0F / static_cast<float>(i + 1);
    return values;
  };
  EXPECT_EQ(numpy_sum(harmonic(5).data(), 5), 2.2833335399627686F);
  EXPECT_EQ(numpy_sum(harmonic(100).data(), 100), 5.187378406524658F);
  EXPECT_EQ(numpy_sum(harmonic(1000).data(), 1000), 7.485471725463867F);
  EXPECT_EQ(numpy_sum(harmonic(1001).data(), 1001), 7.486470699310303F);
  float sequential = 0;
  for (const float value : harmonic(1000)) sequential += value;
  EXPECT_EQ(sequential, 7.485478401184082F);  // what the pairwise order avoids

  std::vector<double> doubles(1000);
  for (size_t i = 0; i < doubles.size(); ++i) doubles[i] = 1.0 / static_cast<double>(i + 1);
  EXPECT_EQ(numpy_sum(doubles.data(), 1000), 7.485470860550345);
}

}  // namespace
}  // namespace tfm
