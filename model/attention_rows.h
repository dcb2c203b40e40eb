#pragma once
#include <algorithm>
#include <cstdint>

#include <c10/util/BFloat16.h>
#include <torch/types.h>

#include "model/row_reductions.h"
#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

// One attention row's softmax and its backward, in float32 lanes (Lanes: runtime/float_lanes.h),
// shared by the fused attention kernels (attention_softmax, head_attention). Inlined into
// TFM_LANE_KERNEL kernels.

namespace tfm {

/// A custom Function's tensor arguments must be defined: an empty tensor stands for none.
inline torch::Tensor or_empty(const torch::Tensor& x, torch::ScalarType dtype) {
  return x.defined() ? x : torch::empty({0}, torch::TensorOptions(dtype));
}

/// Where a row's mask lies: row r = (b, h, t) of [B, H, T] reads mask + b * batch + h * head +
/// t * time, one bool per key (strides 0 where the mask broadcasts).
struct MaskRows {
  const bool* mask = nullptr;  // none: every key kept
  int64_t heads = 1, time = 1, batch = 0, head = 0, step = 0;
  const bool* row(int64_t r) const {
    if (mask == nullptr) return nullptr;
    return mask + (r / (heads * time)) * batch + ((r / time) % heads) * head + (r % time) * step;
  }
};

/// `mask` (bool, broadcastable to [B, H, T, S] = `sizes`; empty: none) as MaskRows; `holder`
/// keeps the expanded (or copied) mask alive.
inline MaskRows mask_rows(const torch::Tensor& mask, at::IntArrayRef sizes, torch::Tensor& holder) {
  MaskRows rows;
  if (mask.numel() == 0) return rows;
  holder = mask.expand(sizes);
  if (holder.stride(3) != 1) holder = holder.contiguous();
  rows.mask = holder.data_ptr<bool>();
  rows.heads = sizes[1];
  rows.time = sizes[2];
  rows.batch = holder.stride(0);
  rows.head = holder.stride(1);
  rows.step = holder.stride(2);
  return rows;
}

/// buffer[0, width): a row's scaled scores, -inf where masked. probs = their softmax (0 everywhere
/// in a row with no key); weights (if not null) = probs * noise. buffer is overwritten.
template <typename Lanes>
TFM_ALWAYS_INLINE void softmax_row(float* buffer, int64_t width, c10::BFloat16* probs, const c10::BFloat16* noise,
                                   c10::BFloat16* weights) {
  const float max = row_max<Lanes>(buffer, width);
  if (max == kRowNegInf) {
    std::fill(probs, probs + width, c10::BFloat16(0.0F));
    if (weights != nullptr) std::fill(weights, weights + width, c10::BFloat16(0.0F));
    return;
  }
  const float inverse = 1.0F / row_exps<Lanes>(buffer, width, max, buffer);
  int64_t j = 0;
  for (; j + kVectorLanes <= width; j += kVectorLanes) {
    const Lanes p = load_lanes<Lanes>(buffer + j) * inverse;
    store_lanes(probs + j, p);
    if (weights != nullptr) store_lanes(weights + j, p * load_lanes<Lanes>(noise + j));
  }
  for (; j < width; ++j) {
    const float p = buffer[j] * inverse;
    probs[j] = c10::BFloat16(p);
    if (weights != nullptr) weights[j] = c10::BFloat16(p * static_cast<float>(noise[j]));
  }
}

/// The softmax's backward through the scale: with g = grad * noise (the gradient reaching the
/// probabilities; noise null: none), out = scale * probs * (g - sum_j g_j probs_j).
template <typename Lanes, typename Grad, typename Out>
TFM_ALWAYS_INLINE void softmax_gradient_row(const Grad* grad, const c10::BFloat16* probs, const c10::BFloat16* noise,
                                            int64_t width, float scale, Out* out) {
  Lanes dots{};
  int64_t j = 0;
  for (; j + kVectorLanes <= width; j += kVectorLanes) {
    Lanes g = load_lanes<Lanes>(grad + j);
    if (noise != nullptr) g = g * load_lanes<Lanes>(noise + j);
    dots += g * load_lanes<Lanes>(probs + j);
  }
  float first = dots[0];
  for (; j < width; ++j) {
    const float g = static_cast<float>(grad[j]) * (noise == nullptr ? 1.0F : static_cast<float>(noise[j]));
    first += g * static_cast<float>(probs[j]);
  }
  const float dot = sum_in_lane_order(dots, first);
  for (j = 0; j + kVectorLanes <= width; j += kVectorLanes) {
    Lanes g = load_lanes<Lanes>(grad + j);
    if (noise != nullptr) g = g * load_lanes<Lanes>(noise + j);
    store_lanes(out + j, (load_lanes<Lanes>(probs + j) * scale) * (g - dot));
  }
  for (; j < width; ++j) {
    const float g = static_cast<float>(grad[j]) * (noise == nullptr ? 1.0F : static_cast<float>(noise[j]));
    out[j] = Out(static_cast<float>(probs[j]) * scale * (g - dot));
  }
}

}  // namespace tfm
