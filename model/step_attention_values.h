#pragma once
#include <cstdint>
#include <type_traits>

#include "model/step_attention_prefetch.h"
#include "model/step_attention_views.h"
#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

// step_attention()'s second pass: the softmax weights times the values, summed per item in
// registers while the positions stream by. Inlined into model/step_attention.cpp's kernels.

namespace tfm {

/// Items that read the same values (a (row, head)'s queries: cross-attention's beams over their
/// sentence's encoder output) take one value pass together, this many at a time.
constexpr int64_t kSharedItems = 4;

/// sum[j * Dh + c * 16 .. j * Dh + c * 16 + 16 * Chunks) for each of Items items j that read these
/// values = the sum over positions [first, length) of item j's weight[s * kBlockItems + j] x
/// value[s] there, each lane's products added in position order: the sums are held in registers
/// while the positions stream by, and each value vector is loaded and widened once for all Items.
template <typename Lanes, int64_t Items, int64_t Chunks, typename K>
TFM_ALWAYS_INLINE void weighted_value_chunks(const K* values, int64_t value_stride, const int64_t* slots,
                                             int64_t slot_stride, const float* weights, int64_t first, int64_t length,
                                             int64_t head_dim, float* sum) {
  Lanes lanes[Items][Chunks] = {};
  const bool far = worth_prefetching<K>(value_stride, length);
  for (int64_t s = first; s < length; ++s) {
    const K* value = values + s * value_stride + slots[s] * slot_stride;
    if (far && s + kPrefetchPositions < length) {
      const int64_t ahead = s + kPrefetchPositions;
      prefetch_bytes(values + ahead * value_stride + slots[ahead] * slot_stride, Chunks * kVectorLanes * sizeof(K));
    }
    Lanes widened[Chunks];
    for (int64_t c = 0; c < Chunks; ++c) widened[c] = load_lanes<Lanes>(value + c * kVectorLanes);
    for (int64_t j = 0; j < Items; ++j) {
      const Lanes weight = splat<Lanes>(weights[s * kBlockItems + j]);
      for (int64_t c = 0; c < Chunks; ++c) lanes[j][c] += weight * widened[c];
    }
  }
  for (int64_t j = 0; j < Items; ++j) {
    for (int64_t c = 0; c < Chunks; ++c) store_lanes(sum + j * head_dim + c * kVectorLanes, lanes[j][c]);
  }
}

/// The sums [Dh] of Items items that read `item`'s values from `first` to item.end: sums[j * Dh ..]
/// = the sum over those positions of weights[s * kBlockItems + j] x the value at s.
template <typename Lanes, int64_t Items, typename Q, typename K>
TFM_ALWAYS_INLINE void weighted_values(const StepViews<Q, K>& a, const ItemViews<Q, K>& item, const float* weights,
                                       int64_t first, float* sums) {
  // Four chunks of sums per item; several items' fill 16 of AVX-512's 32 registers, narrower lanes take one.
  constexpr int64_t kChunks = Items == 1 || std::is_same_v<Lanes, WideLanes> ? 4 : 1;
  const int64_t head_dim = a.head_dim, length = item.end;
  const K* values = item.values;
  int64_t d = 0;
  for (; d + kChunks * kVectorLanes <= head_dim; d += kChunks * kVectorLanes) {
    weighted_value_chunks<Lanes, Items, kChunks>(values + d, a.v_s, item.slots, a.v_b, weights, first, length, head_dim,
                                                 sums + d);
  }
  for (; d + kVectorLanes <= head_dim; d += kVectorLanes) {
    weighted_value_chunks<Lanes, Items, 1>(values + d, a.v_s, item.slots, a.v_b, weights, first, length, head_dim,
                                           sums + d);
  }
  for (; d < head_dim; ++d) {
    for (int64_t j = 0; j < Items; ++j) {
      float total = 0.0F;
      for (int64_t s = first; s < length; ++s) {
        total += weights[s * kBlockItems + j] * static_cast<float>(values[s * a.v_s + item.slots[s] * a.v_b + d]);
      }
      sums[j * head_dim + d] = total;
    }
  }
}

}  // namespace tfm
