#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/fast_exp.h"
#include "runtime/vector_clones.h"

// Reductions over one row of logits, float32 or bfloat16, computed in float32 in kVectorLanes
// independent lanes so that each loop vectorizes. Inlined into TFM_VECTOR_CLONES kernels.

namespace tfm {

constexpr float kRowNegInf = -std::numeric_limits<float>::infinity();

/// max_c row[c]
template <typename T>
TFM_ALWAYS_INLINE float row_max(const T* row, int64_t width) {
  float lanes[kVectorLanes];
  std::fill(lanes, lanes + kVectorLanes, kRowNegInf);
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) {
    for (int64_t j = 0; j < kVectorLanes; ++j) {
      const float x = static_cast<float>(row[c + j]);
      lanes[j] = x > lanes[j] ? x : lanes[j];
    }
  }
  for (; c < width; ++c) lanes[0] = std::max(lanes[0], static_cast<float>(row[c]));
  return *std::max_element(lanes, lanes + kVectorLanes);
}

/// sum_c e^(row[c] - max), for max = row_max(row, width) (finite)
template <typename T>
TFM_ALWAYS_INLINE float row_exp_sum(const T* row, int64_t width, float max) {
  float lanes[kVectorLanes] = {};
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) {
    for (int64_t j = 0; j < kVectorLanes; ++j) lanes[j] += exp_nonpositive(static_cast<float>(row[c + j]) - max);
  }
  for (; c < width; ++c) lanes[0] += exp_nonpositive(static_cast<float>(row[c]) - max);
  float sum = 0.0F;
  for (float lane : lanes) sum += lane;
  return sum;
}

/// log sum_c e^row[c]; -inf for a row of -inf
template <typename T>
TFM_ALWAYS_INLINE float row_log_normalizer(const T* row, int64_t width) {
  const float max = row_max(row, width);
  if (max == kRowNegInf) return kRowNegInf;
  return max + std::log(row_exp_sum(row, width, max));
}

/// sum_c row[c]
template <typename T>
TFM_ALWAYS_INLINE float row_sum(const T* row, int64_t width) {
  float lanes[kVectorLanes] = {};
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) {
    for (int64_t j = 0; j < kVectorLanes; ++j) lanes[j] += static_cast<float>(row[c + j]);
  }
  for (; c < width; ++c) lanes[0] += static_cast<float>(row[c]);
  float sum = 0.0F;
  for (float lane : lanes) sum += lane;
  return sum;
}

}  // namespace tfm
