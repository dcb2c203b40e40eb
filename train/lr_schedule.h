#pragma once
#include <cstdint>
#include <string>

namespace tfm {

/// Learning-rate schedules.
///  noam (§5.3):   lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
///  inverse_sqrt:  lr = peak * step / warmup during warmup, then peak * sqrt(warmup / step) (fairseq's)
struct LrScheduleOptions {
  std::string kind = "noam";
  double factor = 1.0;      // noam: scales the whole curve
  double peak_lr = 5e-4;    // inverse_sqrt: the rate reached at the end of warmup
  int64_t warmup = 4000;
  int64_t d_model = 512;
};

void validate(const LrScheduleOptions& options);

/// The rate for update `step` (1-based).
double learning_rate(const LrScheduleOptions& options, int64_t step);

}  // namespace tfm
