#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/cache_slots.h"
#include "runtime/vector_clones.h"

// What step_attention()'s kernels read and write: one call's tensors as pointers and strides
// (StepViews), one (row, head, query) item's share of them (ItemViews), a thread's workspace, and
// the block sizes the kernels compute in. Inlined into model/step_attention.cpp's TFM_LANE_KERNELs.

namespace tfm {

/// Where one attention call reads and writes; strides in elements. Q is the query's, bias's and
/// output's type, K the keys' and values' (a cache may be stored narrower than the model computes).
template <typename Q, typename K>
struct StepViews {
  const Q* q;
  int64_t q_b, q_h, q_t;
  const K* k;
  int64_t k_b, k_h, k_s;
  const K* v;
  int64_t v_b, v_h, v_s;
  const Q* bias;  // nullptr: no bias
  int64_t bias_b, bias_s;
  Q* out;  // [B, Tq, H, Dh] contiguous
  int64_t rows, heads, queries, keys, head_dim, first;
  const int64_t* row_first;  // [B] or nullptr
  const int64_t* row_end;    // [B] or nullptr: row b attends no key from row_end[b] on
  const CacheSlots* slots;   // nullptr: row b reads keys and values row b
  float sqrt_head_dim;
  bool prefetch_blocks;  // whether to ask for keys and values blocks ahead (SpreadPrefetch)
};

/// (row, head, query) items computed together. Their scores are computed position by position:
/// at one position a block's keys lie side by side in a time-major cache, so the block streams
/// through it instead of jumping a page for every key. Their weighted sums of values are then taken
/// item by item, each sum held in registers (bench/step_attention.sh: faster than walking the
/// positions once for the whole block with the sums in memory).
constexpr int64_t kBlockItems = 32;
/// Items whose scores one vector holds: a block's scores are computed, and its softmax taken, this
/// many items at a time, one item per lane.
constexpr int64_t kGroupItems = kVectorLanes;
static_assert(kBlockItems % kGroupItems == 0, "a block is whole groups");

/// Workspace of one thread: the block's scores [S, kBlockItems] (position-major, so that a group's
/// scores at a position are one vector), and per item the scaled query (float products only) and
/// the weighted sum of values [Dh]; and S zeros, the cache rows of an item that reads its own row
/// at every position.
struct StepScratch {
  std::vector<float> scores, queries, sums;
  std::vector<int64_t> own_row;
  StepScratch(int64_t keys, int64_t head_dim)
      : scores(kBlockItems * keys), queries(kBlockItems * head_dim), sums(kBlockItems * head_dim), own_row(keys, 0) {}
};

/// Where one item reads its keys, values and bias and writes its output: position s's key lies at
/// keys + s * k_s + slots[s] * k_b (its value likewise).
template <typename Q, typename K>
struct ItemViews {
  const Q* query;  // [Dh], as stored (unscaled)
  const K* keys;
  const K* values;
  const int64_t* slots;  // [S]
  const Q* bias;         // nullptr: no bias
  Q* out;
  int64_t first;  // the first key it attends
  int64_t end;    // past the last key it attends
};

template <typename Q, typename K>
TFM_ALWAYS_INLINE ItemViews<Q, K> item_views(const StepViews<Q, K>& a, int64_t item, const int64_t* own_row) {
  const int64_t t = item % a.queries;
  const int64_t h = item / a.queries % a.heads;
  const int64_t b = item / (a.queries * a.heads);
  const Q* q = a.q + b * a.q_b + h * a.q_h + t * a.q_t;
  const int64_t first = a.row_first != nullptr ? std::clamp(a.row_first[b], a.first, a.keys) : a.first;
  const int64_t end = a.row_end != nullptr ? std::clamp(a.row_end[b], first, a.keys) : a.keys;
  const Q* bias = a.bias != nullptr ? a.bias + b * a.bias_b : nullptr;
  Q* out = a.out + ((b * a.queries + t) * a.heads + h) * a.head_dim;
  if (a.slots != nullptr) return {q, a.k + h * a.k_h, a.v + h * a.v_h, a.slots->row(b), bias, out, first, end};
  return {q, a.k + b * a.k_b + h * a.k_h, a.v + b * a.v_b + h * a.v_h, own_row, bias, out, first, end};
}

}  // namespace tfm
