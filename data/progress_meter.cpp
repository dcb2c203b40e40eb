#include "data/progress_meter.h"

#include <spdlog/spdlog.h>

namespace tfm {

ProgressMeter::ProgressMeter(std::string phase, double interval_seconds)
    : phase_(std::move(phase)), interval_(interval_seconds), start_(std::chrono::steady_clock::now()), last_(start_) {}

double ProgressMeter::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressMeter::update(double fraction, const std::string& detail) {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_) return;
  last_ = now;
  const double elapsed = seconds();
  if (fraction <= 0 || fraction > 1) {
    spdlog::info("{}: {}, {:.0f} s", phase_, detail, elapsed);
    return;
  }
  spdlog::info("{}: {:.0f}% ({}), {:.0f} s, about {:.0f} s left", phase_, 100 * fraction, detail, elapsed,
               elapsed * (1 - fraction) / fraction);
}

}  // namespace tfm
