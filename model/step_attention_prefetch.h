#pragma once
#include <cstdint>
#include <limits>

#include "model/step_attention_views.h"
#include "runtime/vector_clones.h"

// step_attention()'s reads from memory asked for ahead of time: a few positions ahead within an
// item, and a later block's items while a block computes.
// Inlined into model/step_attention.cpp's kernels.

namespace tfm {

/// How many positions ahead the kernels ask for keys and values: a block's items at one position
/// lie side by side, but positions lie a whole cache layer apart (rows x heads x Dh), far beyond
/// what the CPU's own prefetchers follow, so every position's first read would wait on memory.
constexpr int64_t kPrefetchPositions = 4;

/// Whether the kernels prefetch: positions lie a page or more apart (a time-major cache, not an
/// encoder output) and the cache spans more than a core's second-level cache (a small batch's
/// stays there from one layer's step to the next, and prefetching it only costs instructions).
template <typename K>
TFM_ALWAYS_INLINE bool worth_prefetching(int64_t position_stride, int64_t positions) {
  const int64_t stride_bytes = position_stride * static_cast<int64_t>(sizeof(K));
  return stride_bytes >= 4096 && stride_bytes * positions >= (int64_t{2} << 20);
}

/// Asks for the keys of a group's items kPrefetchPositions after position s, where worth it.
template <typename Q, typename K>
TFM_ALWAYS_INLINE void prefetch_keys_ahead(const StepViews<Q, K>& a, const ItemViews<Q, K>* items, int64_t s) {
  const int64_t ahead = s + kPrefetchPositions;
  if (ahead >= a.keys || !worth_prefetching<K>(a.k_s, a.keys)) return;
  for (int64_t i = 0; i < kGroupItems; ++i) {
    prefetch_bytes(items[i].keys + ahead * a.k_s + items[i].slots[ahead] * a.k_b, a.head_dim * sizeof(K));
  }
}

/// How many blocks ahead a thread asks for the keys and values its items will read: a block computes
/// for microseconds, long enough for the next one's to arrive from memory when the asking is spread
/// over its positions (BENCHMARKS.md: one block ahead read slightly faster than two to four).
constexpr int64_t kBlocksAhead = 1;

/// Asks for the keys and values of a later block's items [begin, end) into the second-level cache,
/// spread over this block's positions: each of its score pass's positions asks for as many (row,
/// head, position)s as the later block has (row, head)s, about what the position itself reads.
/// A decoder's caches and encoder outputs outgrow the CPU's caches, and the CPU's own prefetchers
/// follow neither a time-major cache (positions a page or more apart) nor the short runs of a
/// sentence's encoder keys. A (row, head)'s queries read the same keys: they are asked for once.
template <typename Q, typename K>
class SpreadPrefetch {
 public:
  SpreadPrefetch(const StepViews<Q, K>& a, int64_t begin, int64_t end, const int64_t* own_row)
      : a_(a), item_(begin), end_(end), own_row_(own_row), per_position_((end - begin + a.queries - 1) / a.queries) {
    if (item_ < end_) start_item();
  }
  /// One position's share.
  TFM_ALWAYS_INLINE void some() { ask(per_position_); }
  /// All that is left.
  TFM_ALWAYS_INLINE void rest() { ask(std::numeric_limits<int64_t>::max()); }

 private:
  TFM_ALWAYS_INLINE void start_item() {
    views_ = item_views(a_, item_, own_row_);
    position_ = views_.first;
  }
  TFM_ALWAYS_INLINE void ask(int64_t count) {
    const int64_t bytes = a_.head_dim * static_cast<int64_t>(sizeof(K));
    while (count > 0 && item_ < end_) {
      if (position_ < views_.end) {
        const int64_t slot = views_.slots[position_];
        prefetch_bytes<2>(views_.keys + position_ * a_.k_s + slot * a_.k_b, bytes);
        prefetch_bytes<2>(views_.values + position_ * a_.v_s + slot * a_.v_b, bytes);
        ++position_;
        --count;
        continue;
      }
      item_ = (item_ / a_.queries + 1) * a_.queries;  // the next (row, head)
      if (item_ < end_) start_item();
    }
  }

  const StepViews<Q, K>& a_;
  int64_t item_, end_;
  const int64_t* own_row_;
  int64_t per_position_;
  ItemViews<Q, K> views_{};
  int64_t position_ = 0;
};

}  // namespace tfm
