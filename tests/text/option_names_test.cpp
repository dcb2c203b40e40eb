#include "text/option_names.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace tfm {
namespace {

std::string shouted(std::string_view key) { return "OPTION<" + std::string(key) + ">"; }

TEST(OptionNames, TheKeyItselfUntilAFrontEndSaysOtherwise) {
  EXPECT_EQ(option_name("max_tokens"), "max_tokens");
  set_option_spelling(&shouted);
  EXPECT_EQ(option_name("max_tokens"), "OPTION<max_tokens>");
  set_option_spelling(nullptr);
  EXPECT_EQ(option_name("max_tokens"), "max_tokens");
}

}  // namespace
}  // namespace tfm
