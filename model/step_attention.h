#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "model/cache_slots.h"

namespace tfm {

/// Whether step_attention() computes for these tensors: CPU, float32 or bfloat16, outside
/// autograd (decoding). Elsewhere the layers take LibTorch's matmul path.
bool step_attention_supported(const torch::Tensor& q);

/// §3.2.1's scaled dot-product attention for the few query positions of one decoding step,
/// softmax(q k^T / sqrt(Dh) + bias) v, computed per (row, head, query) in one pass over the
/// keys: no scores written out, and the keys and values read where they lie (a time-major cache's
/// strided view), where a batched matmul would first copy them. Scores, softmax and the weighted
/// sum are float32 whatever q's dtype.
/// q: [B, H, Tq, Dh]; keys, values: [B, H, S, Dh]; each with its last dimension contiguous. Keys
/// and values are in q's dtype, or bfloat16 under a float32 q (a cache stored narrower).
/// The output is in q's dtype.
/// bias: undefined or [B, 1, 1, S] in q's dtype, added to the scores (0 keeps a key, -inf masks it).
/// Keys after a row's last unmasked one (a padding tail) are not read at all.
/// first: keys before this position are not attended (a local attention window).
/// row_first: null, or B positions: row b attends no key before row_first[b] either (rows that
/// joined a running batch late); those keys are skipped, not scored.
/// slots: null, or B rows of an ancestor table (a cache that beam search reordered without moving
/// it): row b's key and value at position s are then keys[slots->slot(b, s), :, s] and values
/// likewise, and keys and values may have more rows than q ([W, H, S, Dh], W >= B).
/// -> [B, Tq, H*Dh], contiguous: heads concatenated, ready for W^O. A query with no key gets zeros.
torch::Tensor step_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                             const torch::Tensor& bias, int64_t first = 0,
                             const std::vector<int64_t>* row_first = nullptr, const CacheSlots* slots = nullptr);

}  // namespace tfm
