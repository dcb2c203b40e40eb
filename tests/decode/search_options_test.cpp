#include "decode/search_options.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tfm {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

TEST(SearchOptions, BeamAndNBestAreValidated) {
  SearchOptions options;
  options.nbest = 5;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = SearchOptions();
  options.beam = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  for (const int64_t wide : {kLargestBeam + 1, std::numeric_limits<int64_t>::max()}) {
    options.beam = wide;  // 2 * beam candidates once overflowed
    EXPECT_THROW(validate(options), std::invalid_argument) << wide;
  }
  options.beam = kLargestBeam;
  EXPECT_NO_THROW(validate(options));
}

TEST(SearchOptions, NumbersThatAreNotNumbersAreRefused) {
  for (const double bad : {kNaN, kInfinity, -kInfinity}) {
    SearchOptions options;
    options.length_penalty = bad;
    EXPECT_THROW(validate(options), std::invalid_argument) << "length penalty " << bad;
    options = SearchOptions();
    options.unk_penalty = bad;
    EXPECT_THROW(validate(options), std::invalid_argument) << "unk penalty " << bad;
    options = SearchOptions();
    options.max_len_a = bad;
    EXPECT_THROW(validate(options), std::invalid_argument) << "max_len_a " << bad;
  }
  SearchOptions options;
  options.length_penalty = -0.5;  // fairseq's and Marian's penalties may favour short outputs too
  options.unk_penalty = -2.0;     // and raise unk
  EXPECT_NO_THROW(validate(options));
}

TEST(SearchOptions, MaxOutputLengthIsASourceLengthTimesAPlusB) {
  SearchOptions options;
  options.max_len_a = 1.5;
  options.max_len_b = 10;
  EXPECT_EQ(max_output_length(7, options), 20);  // floor(10.5) + 10
  EXPECT_EQ(max_output_length(0, options), 10);
  options.max_len_limit = 12;
  EXPECT_EQ(max_output_length(7, options), 12);
  options = SearchOptions();
  options.max_len_a = 0;
  options.max_len_b = 0;
  EXPECT_EQ(max_output_length(5, options), 1) << "eos at least";
}

TEST(SearchOptions, HugeLimitsSaturateInsteadOfWrapping) {
  // Each of these once wrapped to a negative length: every translation came out empty.
  SearchOptions options;
  options.max_len_a = 1e300;
  ASSERT_NO_THROW(validate(options));
  const int64_t huge = max_output_length(1024, options);
  EXPECT_GT(huge, int64_t{1} << 60);
  options = SearchOptions();
  options.max_len_b = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(max_output_length(1024, options), huge);
  options.max_len_a = 1e300;
  EXPECT_EQ(max_output_length(1024, options), huge);
  options.max_len_limit = 100;
  EXPECT_EQ(max_output_length(1024, options), 100);
  EXPECT_FALSE(reaches_max_length(50, 1024, options));
  EXPECT_TRUE(reaches_max_length(99, 1024, options));
}

}  // namespace
}  // namespace tfm
