#pragma once
// How messages name an option. Library code names an option by its key, the field of its
// options struct ("max_tokens", what a C++ caller sets); a front end says how its users spell
// options (app/ installs the command line's "--max-tokens"). So libraries never hard-code one
// front end's flags, and every user reads the name they can change.
#include <string>
#include <string_view>

namespace tfm {

/// Maps an option key to the name users of this front end know it by.
using OptionSpelling = std::string (*)(std::string_view key);

/// Sets the spelling for the whole process (call once at start-up, before any other thread);
/// nullptr restores the default, the key itself.
void set_option_spelling(OptionSpelling spelling);

/// The name of the option `key` in messages.
std::string option_name(std::string_view key);

}  // namespace tfm
