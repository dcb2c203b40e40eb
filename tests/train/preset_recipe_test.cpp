#include "train/preset_recipe.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tfm {
namespace {

TEST(PresetRecipe, BaseAndBigKeepThePapersSchedule) {
  for (const char* name : {"base", "big"}) {
    const auto recipe = preset_recipe(name);
    EXPECT_EQ(recipe.lr.kind, "noam") << name;
    EXPECT_EQ(recipe.lr.factor, 1.0) << name;
    EXPECT_EQ(recipe.lr.warmup, 4000) << name;
    EXPECT_EQ(recipe.validate_every, 0) << name;  // at every checkpoint (epoch ends)
    EXPECT_EQ(recipe.lr.cooldown, 0.0) << name;
  }
}

TEST(PresetRecipe, CpuPresetsShareTheSearchedRecipe) {
  const auto small = preset_recipe("small"), tiny = preset_recipe("tiny");
  EXPECT_EQ(small.lr.kind, "inverse_sqrt");
  EXPECT_EQ(small.lr.kind, tiny.lr.kind);
  EXPECT_EQ(small.lr.peak_lr, tiny.lr.peak_lr);
  EXPECT_EQ(small.lr.warmup, tiny.lr.warmup);
  EXPECT_EQ(small.max_tokens, tiny.max_tokens);
  EXPECT_EQ(small.validate_every, tiny.validate_every);
  EXPECT_EQ(small.lr.cooldown, 0.0);  // a cool-down lost to the plain average (BENCHMARKS.md)
  EXPECT_EQ(small.lr.cooldown, tiny.lr.cooldown);
  // Validation less often than checkpoints (it costs more than a save), but still a curve.
  EXPECT_GT(small.validate_every, small.save_interval_updates);
  EXPECT_LT(small.lr.warmup, 4000);
  validate(small.lr);
}

TEST(PresetRecipe, UnknownPresetsAreErrors) { EXPECT_THROW(preset_recipe("huge"), std::invalid_argument); }

TEST(PresetRecipe, AutoPicksSmallBelowTheThresholdAndBaseFromIt) {
  EXPECT_EQ(auto_preset(29000), "small");
  EXPECT_EQ(auto_preset(kAutoPresetBasePairs - 1), "small");
  EXPECT_EQ(auto_preset(kAutoPresetBasePairs), "base");
  EXPECT_EQ(auto_preset(4'500'000), "base");
}

}  // namespace
}  // namespace tfm
