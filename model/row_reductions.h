#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/fast_exp.h"
#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

// Reductions over one row of logits, float32 or bfloat16, computed in float32 in kVectorLanes
// independent lanes (Lanes: runtime/float_lanes.h) so that each loop vectorizes. Inlined into
// TFM_LANE_KERNEL kernels.

namespace tfm {

constexpr float kRowNegInf = -std::numeric_limits<float>::infinity();

/// max_c row[c]
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE float row_max(const T* row, int64_t width) {
  Lanes lanes = splat<Lanes>(kRowNegInf);
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) lanes = max_lanes(lanes, load_lanes<Lanes>(row + c));
  float max = max_of_lanes(lanes);
  for (; c < width; ++c) max = std::max(max, static_cast<float>(row[c]));
  return max;
}

/// The lanes' sum in lane order, lane 0 holding `first` (lane 0 with the tail's terms added).
template <typename Lanes>
TFM_ALWAYS_INLINE float sum_in_lane_order(Lanes lanes, float first) {
  float sum = first;
  for (int64_t j = 1; j < kVectorLanes; ++j) sum += lanes[j];
  return sum;
}

/// sum_c e^(row[c] - max), for max = row_max(row, width) (finite)
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE float row_exp_sum(const T* row, int64_t width, float max) {
  Lanes lanes{};
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) lanes += exp_nonpositive(load_lanes<Lanes>(row + c) - max);
  float first = lanes[0];
  for (; c < width; ++c) first += exp_nonpositive(static_cast<float>(row[c]) - max);
  return sum_in_lane_order(lanes, first);
}

/// exps[c] = e^(row[c] - max) for max = row_max(row, width) (finite) -> their sum, in the order
/// row_exp_sum() sums. exps may be row itself (float rows): each value is read before it is written.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE float row_exps(const T* row, int64_t width, float max, float* exps) {
  Lanes lanes{};
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) {
    const Lanes e = exp_nonpositive(load_lanes<Lanes>(row + c) - max);
    store_lanes(exps + c, e);
    lanes += e;
  }
  float first = lanes[0];
  for (; c < width; ++c) first += exps[c] = exp_nonpositive(static_cast<float>(row[c]) - max);
  return sum_in_lane_order(lanes, first);
}

/// log sum_c e^row[c], given max = row_max(row, width); -inf for a row of -inf
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE float row_log_normalizer(const T* row, int64_t width, float max) {
  if (max == kRowNegInf) return kRowNegInf;
  return max + std::log(row_exp_sum<Lanes>(row, width, max));
}

/// log sum_c e^row[c]; -inf for a row of -inf
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE float row_log_normalizer(const T* row, int64_t width) {
  return row_log_normalizer<Lanes>(row, width, row_max<Lanes>(row, width));
}

/// sum_c row[c]
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE float row_sum(const T* row, int64_t width) {
  Lanes lanes{};
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) lanes += load_lanes<Lanes>(row + c);
  float first = lanes[0];
  for (; c < width; ++c) first += static_cast<float>(row[c]);
  return sum_in_lane_order(lanes, first);
}

}  // namespace tfm
