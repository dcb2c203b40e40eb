#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "text/option_names.h"

namespace tfm {

void validate(const LrScheduleOptions& options) {
  if (options.kind != "noam" && options.kind != "inverse_sqrt") {
    throw std::invalid_argument(option_name("lr_scheduler") + " " + options.kind + ": expected noam or inverse_sqrt");
  }
  if (options.warmup < 1) throw std::invalid_argument(option_name("warmup") + " must be >= 1");
  if (!(options.factor > 0 && std::isfinite(options.factor)) ||
      !(options.peak_lr > 0 && std::isfinite(options.peak_lr)))
    throw std::invalid_argument(option_name("lr_factor") + " and " + option_name("lr") + " must be finite and > 0");
  if (!(options.cooldown >= 0 && options.cooldown <= 1)) {
    throw std::invalid_argument(option_name("lr_cooldown") + " must be a fraction of the budget in [0, 1]");
  }
}

namespace {

/// 1 until the cool-down starts, then falling linearly to 0 at the end of the budget.
double cooldown_factor(const LrScheduleOptions& options, double budget_used) {
  if (options.cooldown <= 0) return 1.0;
  return std::clamp((1.0 - budget_used) / options.cooldown, 0.0, 1.0);
}

double scheduled_rate(const LrScheduleOptions& options, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double warmup = static_cast<double>(options.warmup);
  if (options.kind == "inverse_sqrt") {
    return s < warmup ? options.peak_lr * s / warmup : options.peak_lr * std::sqrt(warmup / s);
  }
  return options.factor * std::pow(static_cast<double>(options.d_model), -0.5) *
         std::min(std::pow(s, -0.5), s * std::pow(warmup, -1.5));
}

}  // namespace

double learning_rate(const LrScheduleOptions& options, int64_t step, double budget_used) {
  return scheduled_rate(options, step) * cooldown_factor(options, budget_used);
}

}  // namespace tfm
