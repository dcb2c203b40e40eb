#include "data/cleaning.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "text/option_names.h"

namespace tfm {

void validate(const CleaningOptions& options) {
  if (options.max_len < 1) {
    throw std::invalid_argument(option_name("max_len") + " " + std::to_string(options.max_len) +
                                ": must be at least 1");
  }
  if (!(options.max_len_ratio == 0.0 || options.max_len_ratio >= 1.0)) {
    throw std::invalid_argument(option_name("max_len_ratio") + " " + std::to_string(options.max_len_ratio) +
                                ": must be at least 1 (or 0 for no limit)");
  }
}

CleaningRule check_pair(int64_t source_length, int64_t target_length, const CleaningOptions& options) {
  const int64_t shorter = std::min(source_length, target_length);
  const int64_t longer = std::max(source_length, target_length);
  if (shorter == 0) return CleaningRule::kEmpty;
  if (longer > options.max_len) return CleaningRule::kTooLong;
  if (options.max_len_ratio > 0.0 &&
      static_cast<double>(longer) > options.max_len_ratio * static_cast<double>(shorter)) {
    return CleaningRule::kBadRatio;
  }
  return CleaningRule::kKept;
}

const char* rule_name(CleaningRule rule) {
  switch (rule) {
    case CleaningRule::kKept: return "kept";
    case CleaningRule::kEmpty: return "empty";
    case CleaningRule::kTooLong: return "too long";
    case CleaningRule::kBadRatio: return "length ratio";
  }
  return "?";
}

void CleaningReport::count(CleaningRule rule) {
  ++read;
  switch (rule) {
    case CleaningRule::kKept: ++kept; break;
    case CleaningRule::kEmpty: ++empty; break;
    case CleaningRule::kTooLong: ++too_long; break;
    case CleaningRule::kBadRatio: ++bad_ratio; break;
  }
}

std::string CleaningReport::summary(const CleaningOptions& options) const {
  std::ostringstream text;
  text << read << " pairs read, " << kept << " kept; dropped: " << empty << " with an empty side, " << too_long
       << " longer than " + option_name("max_len") + " " << options.max_len << " subwords, " << bad_ratio
       << " with a length ratio above " + option_name("max_len_ratio") + " ";
  if (options.max_len_ratio > 0.0) {
    text << options.max_len_ratio;
  } else {
    text << "(off)";
  }
  return text.str();
}

void log_report(const std::string& name, const CleaningReport& report, const CleaningOptions& options) {
  spdlog::info("{}: {}", name, report.summary(options));
}

}  // namespace tfm
