#include "text/unicode_text.h"

#include <gtest/gtest.h>

namespace tfm {
namespace {

TEST(ReplaceInvalidUtf8, ReplacesEachBadByteAndKeepsTheRest) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(replace_invalid_utf8("Grüße, 世界 😀"), "Grüße, 世界 😀");
  EXPECT_EQ(replace_invalid_utf8("a\xff"
                                 "b"),
            "a" + fffd + "b");
  EXPECT_EQ(replace_invalid_utf8("\xC3"), fffd);             // truncated 2-byte form
  EXPECT_EQ(replace_invalid_utf8("\xC0\xAF"), fffd + fffd);  // overlong '/'
  EXPECT_EQ(replace_invalid_utf8("\xED\xA0\x80"
                                 "x"),
            fffd + fffd + fffd + "x");  // a surrogate
  EXPECT_TRUE(is_valid_utf8(replace_invalid_utf8(std::string("\x80\xbf\xfe\xf4\x90\x80\x80", 7))));
}

}  // namespace
}  // namespace tfm
