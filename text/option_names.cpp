#include "text/option_names.h"

#include <atomic>

namespace tfm {
namespace {

std::atomic<OptionSpelling> current_spelling{nullptr};

}  // namespace

void set_option_spelling(OptionSpelling spelling) { current_spelling.store(spelling); }

std::string option_name(std::string_view key) {
  const OptionSpelling spelling = current_spelling.load();
  return spelling != nullptr ? spelling(key) : std::string(key);
}

}  // namespace tfm
