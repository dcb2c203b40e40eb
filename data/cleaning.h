#pragma once
// Corpus cleaning as Moses' clean-corpus-n.perl does it, but on subword lengths and never
// silently: every dropped pair is counted under the first rule it breaks, and the counts are logged.
#include <cstdint>
#include <string>

namespace tfm {

/// Which pairs to keep. Lengths are in subwords, without bos/eos.
struct CleaningOptions {
  int64_t max_len = 256;       // --max-len: drop a pair if either side is longer
  double max_len_ratio = 9.0;  // --max-len-ratio: drop if longer/shorter side exceeds it (0 = no limit)
};

/// Throws std::invalid_argument naming the flag for a bad value.
void validate(const CleaningOptions& options);

/// Why a pair is dropped (the first rule it breaks, in this order), or kKept.
enum class CleaningRule { kKept, kEmpty, kTooLong, kBadRatio };

/// The rule pair (source_length, target_length) breaks, or kKept.
CleaningRule check_pair(int64_t source_length, int64_t target_length, const CleaningOptions& options);

/// One-word name of a rule for messages: "kept", "empty", "too long", "length ratio".
const char* rule_name(CleaningRule rule);

/// How many pairs each rule dropped.
struct CleaningReport {
  int64_t read = 0;  // pairs seen
  int64_t kept = 0;
  int64_t empty = 0;      // a side with no subwords (an empty or blank line)
  int64_t too_long = 0;   // a side longer than max_len
  int64_t bad_ratio = 0;  // longer side more than max_len_ratio times the shorter

  /// Counts one pair under `rule`.
  void count(CleaningRule rule);
  int64_t dropped() const { return read - kept; }
  /// "29000 pairs read, 28990 kept; dropped: 3 with an empty side, 5 longer than --max-len 256
  /// subwords, 2 with a length ratio above --max-len-ratio 9"
  std::string summary(const CleaningOptions& options) const;
};

/// Logs `report` at info level (stderr), prefixed by `name` ("train").
void log_report(const std::string& name, const CleaningReport& report, const CleaningOptions& options);

}  // namespace tfm
