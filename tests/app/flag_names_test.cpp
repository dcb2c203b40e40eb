#include "app/flag_names.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "data/batching.h"
#include "decode/search_options.h"
#include "text/option_names.h"

namespace tfm {
namespace {

/// Flags for the test's duration; the key again afterwards, for the tests that follow.
struct FlagSpelling {
  FlagSpelling() { spell_options_as_flags(); }
  ~FlagSpelling() { set_option_spelling(nullptr); }
};

template <class Options>
std::string validation_error(const Options& options) {
  try {
    validate(options);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(FlagNames, KeysMapToTheFlagsThatSetThem) {
  EXPECT_EQ(flag_for_option("max_tokens"), "--max-tokens");
  EXPECT_EQ(flag_for_option("lr"), "--lr");
  EXPECT_EQ(flag_for_option("chrf_char_order"), std::nullopt);  // only the C++ API sets it
}

TEST(FlagNames, LibraryErrorsNameTheFieldForCallersAndTheFlagOnTheCommandLine) {
  BatchingOptions batching;
  batching.max_tokens = 1;
  SearchOptions search;
  search.beam = 0;
  EXPECT_EQ(validation_error(batching), "max_tokens 1: must be at least 2");
  EXPECT_EQ(validation_error(search), "beam must be within 1 and 1024");
  const FlagSpelling flags;
  EXPECT_EQ(validation_error(batching), "--max-tokens 1: must be at least 2");
  EXPECT_EQ(validation_error(search), "--beam must be within 1 and 1024");
  EXPECT_EQ(option_name("chrf_char_order"), "chrf_char_order");
}

}  // namespace
}  // namespace tfm
