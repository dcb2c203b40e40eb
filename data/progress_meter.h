#pragma once
// Progress of a long phase (sampling, tokenizer training, encoding) on stderr, with an estimate of
// the time left from the share done so far: one line every few seconds, none for a quick phase.
#include <chrono>
#include <string>

namespace tfm {

class ProgressMeter {
 public:
  explicit ProgressMeter(std::string phase, double interval_seconds = 10);
  /// Logs a line when `interval_seconds` have passed since the last: `fraction` done (in [0, 1];
  /// negative when unknown: no estimate) and `detail` ("1.2M pairs").
  void update(double fraction, const std::string& detail);
  double seconds() const;

 private:
  std::string phase_;
  double interval_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace tfm
