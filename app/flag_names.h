#pragma once
// The command line's spelling of the options the libraries name by key (text/option_names.h).
#include <optional>
#include <string>
#include <string_view>

namespace tfm {

/// The flag that sets option `key` ("max_tokens" -> "--max-tokens"), or nothing when no
/// command sets it (an option only the C++ API reaches).
std::optional<std::string> flag_for_option(std::string_view key);

/// Makes every message name options as flags; main() calls it once, first.
void spell_options_as_flags();

}  // namespace tfm
