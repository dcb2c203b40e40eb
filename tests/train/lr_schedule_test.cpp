#include "train/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tfm {
namespace {

TEST(LrSchedule, NoamEqualsThePapersFormula) {
  LrScheduleOptions options;  // d_model 512, warmup 4000, factor 1
  // lr = 512^-0.5 * min(step^-0.5, step * 4000^-1.5)
  EXPECT_NEAR(learning_rate(options, 1), 0.04419417 * 1 * std::pow(4000.0, -1.5), 1e-12);
  EXPECT_NEAR(learning_rate(options, 4000), 0.04419417 * 0.01581139, 1e-9);  // the peak: 6.988e-4
  EXPECT_NEAR(learning_rate(options, 16000), 0.04419417 / 126.4911064, 1e-9);
  EXPECT_LT(learning_rate(options, 3999), learning_rate(options, 4000));
  EXPECT_GT(learning_rate(options, 4000), learning_rate(options, 4001));
  options.factor = 2.0;
  EXPECT_NEAR(learning_rate(options, 4000), 2 * 0.04419417 * 0.01581139, 1e-9);
}

TEST(LrSchedule, InverseSqrt) {
  LrScheduleOptions options;
  options.kind = "inverse_sqrt";
  options.peak_lr = 1e-3;
  options.warmup = 100;
  EXPECT_NEAR(learning_rate(options, 50), 5e-4, 1e-12);
  EXPECT_NEAR(learning_rate(options, 100), 1e-3, 1e-12);
  EXPECT_NEAR(learning_rate(options, 400), 5e-4, 1e-12);
  options.kind = "cosine";
  EXPECT_THROW(validate(options), std::invalid_argument);
}

TEST(LrSchedule, CooldownFallsLinearlyToZeroOverTheEndOfTheBudget) {
  for (const char* kind : {"inverse_sqrt", "noam"}) {
    LrScheduleOptions options;
    options.kind = kind;
    options.peak_lr = 1e-3;
    options.warmup = 100;
    LrScheduleOptions plain = options;
    options.cooldown = 0.2;
    // Untouched until the last fifth of the budget; then (1 - used) / 0.2 of the plain rate.
    EXPECT_DOUBLE_EQ(learning_rate(options, 50, 0.3), learning_rate(plain, 50)) << kind;
    EXPECT_DOUBLE_EQ(learning_rate(options, 400, 0.8), learning_rate(plain, 400)) << kind;
    EXPECT_NEAR(learning_rate(options, 400, 0.9), 0.5 * learning_rate(plain, 400), 1e-15) << kind;
    EXPECT_NEAR(learning_rate(options, 400, 0.95), 0.25 * learning_rate(plain, 400), 1e-15) << kind;
    EXPECT_EQ(learning_rate(options, 400, 1.0), 0.0) << kind;
    validate(options);
  }
  LrScheduleOptions options;
  options.cooldown = 1.5;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.cooldown = -0.1;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = LrScheduleOptions();
  options.factor = std::numeric_limits<double>::infinity();
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = LrScheduleOptions();
  options.peak_lr = std::nan("");
  EXPECT_THROW(validate(options), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
