#include "model/step_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/step_attention_prefetch.h"
#include "model/step_attention_values.h"
#include "model/step_attention_views.h"
#include "runtime/fast_exp.h"
#include "runtime/float_lanes.h"
#include "runtime/step_team.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

/// The bias row a group's items share (in a cross-attention block, one sentence's), or nullptr
/// where they have several (or no bias).
template <typename Q, typename K>
TFM_ALWAYS_INLINE const Q* shared_bias(const ItemViews<Q, K>* items) {
  for (int64_t i = 1; i < kGroupItems; ++i) {
    if (items[i].bias != items[0].bias) return nullptr;
  }
  return items[0].bias;
}

/// A group's raw scores (one item per lane) at position s -> q k / sqrt(Dh) + bias, -inf where an
/// item does not attend s. `bias`: the items' shared bias row (shared_bias). `masking`: whether
/// some item may not attend s (outside it every item attends, and the mask is not built).
template <typename Lanes, typename Q, typename K>
TFM_ALWAYS_INLINE Lanes finished_scores(const StepViews<Q, K>& a, const ItemViews<Q, K>* items, const Q* bias,
                                        Lanes scores, int64_t s, bool masking) {
  if (bias != nullptr) {
    scores = scores + static_cast<float>(bias[s * a.bias_s]);
  } else if (a.bias != nullptr) {
    float biases[kGroupItems];
    for (int64_t i = 0; i < kGroupItems; ++i) biases[i] = static_cast<float>(items[i].bias[s * a.bias_s]);
    scores += load_lanes<Lanes>(biases);
  }
  if (!masking) return scores;
  float masked[kGroupItems];
  for (int64_t i = 0; i < kGroupItems; ++i)
    masked[i] = s < items[i].first || s >= items[i].end ? -std::numeric_limits<float>::infinity() : 0.0F;
  const Lanes mask = load_lanes<Lanes>(masked);
  return where(mask < 0.0F, mask, scores);
}

/// The scores' products in float lanes: each item's query scaled by 1 / sqrt(Dh) into float
/// (`queries`), each dot product added in 16 lanes (the last head_dim % 16 into lane 0) and then
/// the lanes. Every CPU class computes the same bits.
struct FloatProducts {
  /// query [Dh] = the item's query / sqrt(Dh), in float.
  template <typename Q, typename K>
  TFM_ALWAYS_INLINE static void prepare(const StepViews<Q, K>& a, const ItemViews<Q, K>& item, float* query) {
    for (int64_t d = 0; d < a.head_dim; ++d) query[d] = static_cast<float>(item.query[d]) / a.sqrt_head_dim;
  }
  template <typename Lanes, typename Q, typename K>
  TFM_ALWAYS_INLINE static Lanes scores(const StepViews<Q, K>& a, const ItemViews<Q, K>* items, const float* queries,
                                        int64_t s) {
    const int64_t head_dim = a.head_dim, whole = head_dim / kVectorLanes * kVectorLanes;
    prefetch_keys_ahead(a, items, s);
    Lanes products[kGroupItems];
    for (int64_t i = 0; i < kGroupItems; ++i) {
      const float* query = queries + i * head_dim;
      const K* key = items[i].keys + s * a.k_s + items[i].slots[s] * a.k_b;
      Lanes sum{};
      for (int64_t d = 0; d < whole; d += kVectorLanes)
        sum += load_lanes<Lanes>(query + d) * load_lanes<Lanes>(key + d);
      float lane0 = sum[0];
      for (int64_t d = whole; d < head_dim; ++d) lane0 += query[d] * static_cast<float>(key[d]);
      products[i] = with_lane0(sum, lane0);
    }
    return sums_of_lanes(products);
  }
};

/// A group's scores [S, kBlockItems] at positions [first, length) -> softmax weights in place,
/// each lane (item) over its positions. -> per lane, whether the item attends any key.
template <typename Lanes>
TFM_ALWAYS_INLINE auto group_softmax(float* scores, int64_t first, int64_t length) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  Lanes max = splat<Lanes>(kNegInf);
  for (int64_t s = first; s < length; ++s) max = max_lanes(load_lanes<Lanes>(scores + s * kBlockItems), max);
  const auto attends = max != kNegInf;
  Lanes total{};
  for (int64_t s = first; s < length; ++s) {
    const Lanes weight = exp_nonpositive(load_lanes<Lanes>(scores + s * kBlockItems) - max);
    store_lanes(scores + s * kBlockItems, weight);
    total += weight;
  }
  const Lanes inverse_total = 1.0F / total;
  for (int64_t s = first; s < length; ++s) {
    store_lanes(scores + s * kBlockItems, load_lanes<Lanes>(scores + s * kBlockItems) * inverse_total);
  }
  return attends;
}

/// Whether items[0 .. kSharedItems) read the same keys and values over the same positions.
template <typename Q, typename K>
TFM_ALWAYS_INLINE bool read_alike(const ItemViews<Q, K>* items) {
  for (int64_t j = 1; j < kSharedItems; ++j) {
    if (items[j].keys != items[0].keys || items[j].values != items[0].values || items[j].slots != items[0].slots ||
        items[j].first != items[0].first || items[j].end != items[0].end) {
      return false;
    }
  }
  return true;
}

/// Items [begin, end), at most kBlockItems: out = softmax(q k^T / sqrt(Dh) + bias) v for each.
/// ahead: null, or a later block's keys and values to ask for meanwhile.
template <typename Lanes, typename Products, typename Q, typename K>
TFM_ALWAYS_INLINE void attend_block(const StepViews<Q, K>& a, int64_t begin, int64_t end, StepScratch& scratch,
                                    SpreadPrefetch<Q, K>* ahead) {
  const int64_t count = end - begin, head_dim = a.head_dim;
  const int64_t groups = (count + kGroupItems - 1) / kGroupItems;
  ItemViews<Q, K> items[kBlockItems];
  int64_t block_first = a.keys, length = 0;       // the block's keys: [block_first, length)
  int64_t common_first = 0, common_end = a.keys;  // the keys every item attends
  for (int64_t i = 0; i < count; ++i) {
    items[i] = item_views(a, begin + i, scratch.own_row.data());
    block_first = std::min(block_first, items[i].first);
    length = std::max(length, items[i].end);
    common_first = std::max(common_first, items[i].first);
    common_end = std::min(common_end, items[i].end);
  }
  for (int64_t i = count; i < groups * kGroupItems; ++i) {  // a short group's spare lanes attend nothing
    items[i] = items[0];
    items[i].first = items[i].end = a.keys;
  }
  for (int64_t i = 0; i < groups * kGroupItems; ++i) Products::prepare(a, items[i], &scratch.queries[i * head_dim]);

  const Q* biases[kBlockItems / kGroupItems];
  for (int64_t g = 0; g < groups; ++g) biases[g] = shared_bias(items + g * kGroupItems);
  float* scores = scratch.scores.data();
  for (int64_t s = block_first; s < length; ++s) {
    // Spare lanes may take any score: nothing reads their softmax. (Their keys are item 0's.)
    const bool masking = s < common_first || s >= common_end;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t item = g * kGroupItems;
      const Lanes raw = Products::template scores<Lanes>(a, items + item, &scratch.queries[item * head_dim], s);
      store_lanes(scores + s * kBlockItems + item, finished_scores(a, items + item, biases[g], raw, s, masking));
    }
    if (ahead != nullptr) ahead->some();
  }
  if (ahead != nullptr) ahead->rest();
  decltype(group_softmax<Lanes>(nullptr, 0, 0)) attends[kBlockItems / kGroupItems];
  for (int64_t g = 0; g < groups; ++g) attends[g] = group_softmax<Lanes>(scores + g * kGroupItems, block_first, length);

  float* sums = scratch.sums.data();
  for (int64_t i = 0; i < count;) {
    const int64_t first = std::max(block_first, items[i].first);
    if (i + kSharedItems <= count && read_alike(items + i)) {
      weighted_values<Lanes, kSharedItems>(a, items[i], scores + i, first, sums + i * head_dim);
      i += kSharedItems;
    } else {
      weighted_values<Lanes, 1>(a, items[i], scores + i, first, sums + i * head_dim);
      ++i;
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    const bool attended = attends[i / kGroupItems][i % kGroupItems] != 0;
    for (int64_t d = 0; d < head_dim; ++d) {  // a query with no key gets zeros
      items[i].out[d] = static_cast<Q>(attended ? sums[i * head_dim + d] : 0.0F);
    }
  }
}

/// Items [begin, end) of the (row, head, query) grid, a block at a time.
template <typename Lanes, typename Products = FloatProducts, typename Q, typename K>
TFM_ALWAYS_INLINE void attend_items(const StepViews<Q, K>& a, int64_t begin, int64_t end) {
  StepScratch scratch(a.keys, a.head_dim);
  for (int64_t block = begin; block < end; block += kBlockItems) {
    const int64_t ahead = block + kBlocksAhead * kBlockItems;
    std::optional<SpreadPrefetch<Q, K>> prefetch;
    if (a.prefetch_blocks && ahead < end)
      prefetch.emplace(a, ahead, std::min(end, ahead + kBlockItems), scratch.own_row.data());
    attend_block<Lanes, Products>(a, block, std::min(end, block + kBlockItems), scratch,
                                  prefetch ? &*prefetch : nullptr);
  }
}

using BFloat16 = c10::BFloat16;
TFM_LANE_KERNEL((void attend_range(const StepViews<float, float>& a, int64_t begin, int64_t end)),
                attend_items<Lanes>(a, begin, end);)
TFM_LANE_KERNEL((void attend_range(const StepViews<BFloat16, BFloat16>& a, int64_t begin, int64_t end)),
                attend_items<Lanes>(a, begin, end);)
TFM_LANE_KERNEL((void attend_range(const StepViews<float, BFloat16>& a, int64_t begin, int64_t end)),
                attend_items<Lanes>(a, begin, end);)

#ifdef TFM_EXTENSION_KERNELS
// With bfloat16 queries and keys, AVX512-BF16's dot product instruction does 32 multiply-adds into
// 16 float lanes where widening a key to float and multiplying takes three instructions per 16: a
// score's products are exact in float either way, only their order of addition differs.
/// The scores' products by the dot product instruction, over the queries as stored; the sum is
/// scaled by 1 / sqrt(Dh) afterwards. head_dim: a multiple of 32.
struct BFloat16DotProducts {
  /// Nothing: the scores read the queries as stored.
  TFM_ALWAYS_INLINE static void prepare(const StepViews<BFloat16, BFloat16>& /*a*/,
                                        const ItemViews<BFloat16, BFloat16>& /*item*/, float* /*query*/) {}
  TFM_BF16_DOT_TARGET static WideLanes scores(const StepViews<BFloat16, BFloat16>& a,
                                              const ItemViews<BFloat16, BFloat16>* items, const float* /*queries*/,
                                              int64_t s) {
    prefetch_keys_ahead(a, items, s);
    WideLanes products[kGroupItems];
    for (int64_t i = 0; i < kGroupItems; ++i) {
      const BFloat16* key = items[i].keys + s * a.k_s + items[i].slots[s] * a.k_b;
      __m512 sum = _mm512_setzero_ps();
      for (int64_t d = 0; d < a.head_dim; d += 2 * kVectorLanes) {
        sum = _mm512_dpbf16_ps(sum, reinterpret_cast<__m512bh>(_mm512_loadu_si512(items[i].query + d)),
                               reinterpret_cast<__m512bh>(_mm512_loadu_si512(key + d)));
      }
      products[i].v = reinterpret_cast<FloatWhole>(sum);
    }
    return sums_of_lanes(products) * (1.0F / a.sqrt_head_dim);
  }
  template <typename Lanes>
  TFM_ALWAYS_INLINE static WideLanes scores(const StepViews<BFloat16, BFloat16>& a,
                                            const ItemViews<BFloat16, BFloat16>* items, const float* queries,
                                            int64_t s) {
    return scores(a, items, queries, s);
  }
};
TFM_BF16_DOT_TARGET void attend_range_bf16_dot(const StepViews<BFloat16, BFloat16>& a, int64_t begin, int64_t end) {
  attend_items<WideLanes, BFloat16DotProducts>(a, begin, end);
}
#endif

/// attend_range, or with bfloat16 queries and keys the dot product instruction's version where the
/// CPU has it.
template <typename Q, typename K>
void best_attend_range(const StepViews<Q, K>& a, int64_t begin, int64_t end) {
#ifdef TFM_EXTENSION_KERNELS
  if constexpr (std::is_same_v<Q, BFloat16> && std::is_same_v<K, BFloat16>) {
    static const bool cpu_has_it = __builtin_cpu_supports("avx512bf16");
    if (cpu_has_it && a.head_dim % (2 * kVectorLanes) == 0) return attend_range_bf16_dot(a, begin, end);
  }
#endif
  attend_range(a, begin, end);
}

template <typename Q, typename K>
void attend_all(const StepViews<Q, K>& a) {
  const int64_t items = a.rows * a.heads * a.queries;
  // Enough multiply-adds per task that a thread's share outweighs waking it.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, a.keys * a.head_dim));
  team_parallel_for(0, items, grain, [&](int64_t begin, int64_t end) { best_attend_range(a, begin, end); });
}

/// Per row of a bias [B, 1, 1, S], the position after its last key not masked with -inf: a
/// padding bias's tail is then skipped, not scored (its weights would be exactly zero).
template <typename Q>
std::vector<int64_t> unmasked_ends(const torch::Tensor& bias) {
  const int64_t rows = bias.size(0), length = bias.size(3), position_stride = bias.stride(3);
  const Q* data = bias.data_ptr<Q>();
  std::vector<int64_t> ends(rows);
  for (int64_t b = 0; b < rows; ++b) {
    const Q* row = data + b * bias.stride(0);
    int64_t end = length;
    while (end > 0 && static_cast<float>(row[(end - 1) * position_stride]) == -std::numeric_limits<float>::infinity()) {
      --end;
    }
    ends[b] = end;
  }
  return ends;
}

/// Whether the keys and values a call may read outgrow a core's second-level cache, where a small
/// batch's stay from one layer's step to the next and asking for them ahead only costs instructions.
bool outgrows_second_level_cache(const torch::Tensor& keys) {
  return 2 * keys.numel() * keys.element_size() >= (int64_t{2} << 20);
}

template <typename Q, typename K>
StepViews<Q, K> views_of(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                         const torch::Tensor& bias, int64_t first, const std::vector<int64_t>* row_first,
                         const std::vector<int64_t>& row_end, const CacheSlots* slots, torch::Tensor& out) {
  const int64_t length = keys.size(2);
  return {q.data_ptr<Q>(),
          q.stride(0),
          q.stride(1),
          q.stride(2),
          keys.data_ptr<K>(),
          keys.stride(0),
          keys.stride(1),
          keys.stride(2),
          values.data_ptr<K>(),
          values.stride(0),
          values.stride(1),
          values.stride(2),
          bias.defined() ? bias.data_ptr<Q>() : nullptr,
          bias.defined() ? bias.stride(0) : 0,
          bias.defined() ? bias.stride(3) : 0,
          out.data_ptr<Q>(),
          q.size(0),
          q.size(1),
          q.size(2),
          length,
          q.size(3),
          std::clamp<int64_t>(first, 0, length),
          row_first != nullptr ? row_first->data() : nullptr,
          row_end.empty() ? nullptr : row_end.data(),
          slots,
          std::sqrt(static_cast<float>(q.size(3))),
          outgrows_second_level_cache(keys)};
}

}  // namespace

bool step_attention_supported(const torch::Tensor& q) {
  return q.device().is_cpu() && (q.scalar_type() == torch::kFloat32 || q.scalar_type() == torch::kBFloat16) &&
         !(torch::GradMode::is_enabled() && q.requires_grad());
}

torch::Tensor step_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                             const torch::Tensor& bias, int64_t first, const std::vector<int64_t>* row_first,
                             const CacheSlots* slots) {
  TORCH_CHECK(step_attention_supported(q), "step_attention: a CPU float32 or bfloat16 query outside autograd");
  TORCH_CHECK(q.dim() == 4 && keys.dim() == 4 && values.sizes() == keys.sizes(), "step_attention: 4-d q, keys, values");
  const bool narrow_cache = q.scalar_type() == torch::kFloat32 && keys.scalar_type() == torch::kBFloat16;
  TORCH_CHECK((keys.scalar_type() == q.scalar_type() || narrow_cache) && values.scalar_type() == keys.scalar_type(),
              "step_attention: keys and values of q's dtype, or bfloat16 under a float32 q; got q ", q.scalar_type(),
              ", keys ", keys.scalar_type(), ", values ", values.scalar_type());
  const int64_t rows = q.size(0), heads = q.size(1), queries = q.size(2), head_dim = q.size(3);
  const int64_t length = keys.size(2);
  TORCH_CHECK((slots != nullptr ? keys.size(0) >= rows : keys.size(0) == rows) && keys.size(1) == heads &&
                  keys.size(3) == head_dim,
              "step_attention: keys ", keys.sizes(), " do not match q ", q.sizes());
  TORCH_CHECK(q.stride(3) == 1 && keys.stride(3) == 1 && values.stride(3) == 1,
              "step_attention: the head dimension must be contiguous");
  if (bias.defined()) {
    TORCH_CHECK(
        bias.scalar_type() == q.scalar_type() && bias.dim() == 4 && bias.size(0) == rows && bias.size(3) == length,
        "step_attention: bias ", bias.sizes(), " is not [B, 1, 1, S] for keys ", keys.sizes());
  }
  if (slots != nullptr && slots->identity()) slots = nullptr;
  TORCH_CHECK(slots == nullptr || slots->rows() == rows, "step_attention: ", rows, " rows but a cache table of ",
              slots == nullptr ? 0 : slots->rows());
  TORCH_CHECK(row_first == nullptr || static_cast<int64_t>(row_first->size()) == rows, "step_attention: ", rows,
              " rows but ", row_first == nullptr ? 0 : row_first->size(), " first positions");
  auto out = torch::empty({rows, queries, heads * head_dim}, q.options());
  const bool float_query = q.scalar_type() == torch::kFloat32;
  std::vector<int64_t> row_end;
  if (bias.defined()) row_end = float_query ? unmasked_ends<float>(bias) : unmasked_ends<BFloat16>(bias);
  if (narrow_cache) {
    attend_all(views_of<float, BFloat16>(q, keys, values, bias, first, row_first, row_end, slots, out));
  } else if (float_query) {
    attend_all(views_of<float, float>(q, keys, values, bias, first, row_first, row_end, slots, out));
  } else {
    attend_all(views_of<BFloat16, BFloat16>(q, keys, values, bias, first, row_first, row_end, slots, out));
  }
  return out;
}

}  // namespace tfm
