#include "data/cleaning.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tfm {
namespace {

TEST(Cleaning, EachRuleInOrder) {
  CleaningOptions options;
  options.max_len = 10;
  options.max_len_ratio = 3.0;
  EXPECT_EQ(check_pair(5, 7, options), CleaningRule::kKept);
  EXPECT_EQ(check_pair(10, 10, options), CleaningRule::kKept);  // max_len itself is allowed
  EXPECT_EQ(check_pair(3, 9, options), CleaningRule::kKept);    // ratio exactly 3 is allowed
  EXPECT_EQ(check_pair(0, 4, options), CleaningRule::kEmpty);
  EXPECT_EQ(check_pair(4, 0, options), CleaningRule::kEmpty);
  EXPECT_EQ(check_pair(0, 40, options), CleaningRule::kEmpty);  // empty wins over too long
  EXPECT_EQ(check_pair(11, 10, options), CleaningRule::kTooLong);
  EXPECT_EQ(check_pair(1, 11, options), CleaningRule::kTooLong);  // too long wins over the ratio
  EXPECT_EQ(check_pair(3, 10, options), CleaningRule::kBadRatio);
  EXPECT_EQ(check_pair(10, 3, options), CleaningRule::kBadRatio);
  options.max_len_ratio = 0.0;  // off
  EXPECT_EQ(check_pair(1, 10, options), CleaningRule::kKept);
}

TEST(Cleaning, ReportCountsEveryPairOnceAndSaysWhatWasDropped) {
  CleaningOptions options;
  options.max_len = 10;
  options.max_len_ratio = 2.0;
  CleaningReport report;
  for (const auto& [source, target] : std::vector<std::pair<int, int>>{{1, 1}, {0, 3}, {12, 12}, {2, 5}, {4, 4}}) {
    report.count(check_pair(source, target, options));
  }
  EXPECT_EQ(report.read, 5);
  EXPECT_EQ(report.kept, 2);
  EXPECT_EQ(report.empty, 1);
  EXPECT_EQ(report.too_long, 1);
  EXPECT_EQ(report.bad_ratio, 1);
  EXPECT_EQ(report.dropped(), 3);
  EXPECT_EQ(report.summary(options),
            "5 pairs read, 2 kept; dropped: 1 with an empty side, 1 longer than max_len 10 subwords, "
            "1 with a length ratio above max_len_ratio 2");
}

TEST(Cleaning, RejectsBadOptions) {
  CleaningOptions options;
  options.max_len = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.max_len = 5;
  options.max_len_ratio = 0.5;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.max_len_ratio = 0.0;
  EXPECT_NO_THROW(validate(options));
}

}  // namespace
}  // namespace tfm
