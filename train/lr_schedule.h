#pragma once
#include <cstdint>
#include <string>

namespace tfm {

/// Learning-rate schedules.
///  noam (§5.3):   lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
///  inverse_sqrt:  lr = peak * step / warmup during warmup, then peak * sqrt(warmup / step) (fairseq's)
/// Either can end in a cool-down: over the last `cooldown` fraction of the training budget
/// (--time-limit, --max-updates or --max-epochs) the rate falls linearly to zero, so a run that
/// stops on its budget ends annealed instead of at the schedule's still-high rate
/// (warmup-stable-decay; Hägele et al. 2024, "Scaling Laws and Compute-Optimal Training Beyond
/// Fixed Training Durations").
struct LrScheduleOptions {
  std::string kind = "noam";
  double factor = 1.0;    // noam: scales the whole curve
  double peak_lr = 5e-4;  // inverse_sqrt: the rate reached at the end of warmup
  int64_t warmup = 4000;
  int64_t d_model = 512;
  double cooldown = 0.0;  // the last fraction of the budget spent cooling down (0 = none)
};

void validate(const LrScheduleOptions& options);

/// The rate for update `step` (1-based), `budget_used` (0..1) of the way through training.
double learning_rate(const LrScheduleOptions& options, int64_t step, double budget_used = 0.0);

}  // namespace tfm
