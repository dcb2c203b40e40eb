#pragma once
#include <cstdint>
#include <tuple>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/attention_score.h"
#include "model/cache_slots.h"
#include "model/head_attention.h"
#include "model/linear.h"
#include "model/model_config.h"

namespace tfm {

/// §3.2.1: softmax(scores) V, where masked scores are -inf before the softmax. A query whose
/// keys are all masked gets zero weights (not NaN).
/// scores: [B, H, T, S], v: [B, H, S, Dh], mask: bool broadcastable to [B, H, T, S] or undefined
/// -> [B, H, T, Dh]
torch::Tensor attend(const torch::Tensor& scores, const torch::Tensor& v, const torch::Tensor& mask, double dropout,
                     bool training);

/// §3.2.1's weights: softmax(scores) with masked keys at 0, and a query with no key all 0.
/// scores: [B, H, T, S], mask as attend() -> [B, H, T, S]. A floating-point mask is added to the
/// scores instead (0 to keep a key, -inf to mask it; every query must keep one).
torch::Tensor attention_weights(const torch::Tensor& scores, const torch::Tensor& mask);

/// §3.2.1's scaled dot-product attention as one fused LibTorch kernel, which multi-head attention
/// uses on CUDA (with fused kernels on). q: [B, H, T, Dh], k, v: [B, H, S, Dh], mask as attend()
/// -> [B, H, T, Dh]; dropout applies to the attention weights.
torch::Tensor fused_scaled_dot_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& mask, double dropout);

/// §3.2.2 Multi-Head Attention.
struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions(int64_t d_model, int64_t heads) : d_model_(d_model), heads_(heads) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, heads);
  TORCH_ARG(double, dropout) = 0.0;  // on attention weights
  TORCH_ARG(AttentionScore, score) = AttentionScore::kScaledDot;
  /// Self-attention projects Q, K and V from one input with one fused [3D, D] matrix;
  /// cross-attention projects Q from the decoder and K, V (fused [2D, D]) from the encoder.
  TORCH_ARG(bool, self_attention) = true;
};

class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  explicit MultiHeadAttentionImpl(const MultiHeadAttentionOptions& options);

  /// Self-attention. x: [B, T, D], mask: broadcastable to [B, H, T, T] -> [B, T, D]; with
  /// `weights`, the attention weights [B, H, T, T] are stored there (through the explicit path).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights = nullptr);
  /// Cross-attention. x: [B, T, D], memory: [B, S, D], mask: broadcastable to [B, H, T, S] -> [B, T, D];
  /// `weights` as above, [B, H, T, S].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& mask,
                        torch::Tensor* weights = nullptr);

  // Pieces for incremental decoding, where keys and values are cached between steps.
  /// Self-attention: x [B, T, D] -> q, k, v each [B, H, T, Dh]
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> project_qkv(const torch::Tensor& x);
  /// Cross-attention: x [B, T, D] -> q [B, H, T, Dh]
  torch::Tensor project_q(const torch::Tensor& x);
  /// Cross-attention: memory [B, S, D] -> k, v each [B, H, S, Dh]
  std::tuple<torch::Tensor, torch::Tensor> project_kv(const torch::Tensor& memory);
  /// q [B, H, T, Dh], k, v [B, H, S, Dh] -> [B, T, D] (heads concatenated, then W^O); with
  /// `weights`, the attention weights [B, H, T, S] are stored there.
  torch::Tensor attend_heads(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& mask, torch::Tensor* weights = nullptr);
  /// A decoding step's attention over cached keys and values: q [B, H, Tq, Dh], k, v [B, H, S, Dh]
  /// (strided views welcome), bias [B, 1, 1, S] additive or undefined, keys before `first` masked,
  /// and with row_first (B positions) row b's keys before row_first[b] too
  /// -> [B, Tq, D]. Through step_attention() where it computes (model/step_attention.h), else
  /// through attend_heads(). k and v may be stored narrower than q (a bfloat16 cache).
  /// With `slots` (a reordered cache, model/cache_slots.h), k and v are [W, H, S, Dh], W >= B, and
  /// row b reads its position s from row slots->slot(b, s).
  torch::Tensor attend_cached(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& bias, int64_t first = 0,
                              const std::vector<int64_t>* row_first = nullptr, const CacheSlots* slots = nullptr);

  MultiHeadAttentionOptions options;
  Linear in_proj{nullptr};   // self-attention: [W^Q; W^K; W^V], [3D, D]
  Linear q_proj{nullptr};    // cross-attention: W^Q, [D, D]
  Linear kv_proj{nullptr};   // cross-attention: [W^K; W^V], [2D, D]
  Linear out_proj{nullptr};  // W^O, [D, D]
  AttentionScorer scorer{nullptr};

 private:
  /// Inference on the CPU under a key-padding mask ([B, 1, 1, S] booleans), where step_attention()
  /// computes: the mask as an additive bias (0 keeps a key, -inf masks it) in q's dtype. Else
  /// undefined: attend_heads() takes its matmul path.
  torch::Tensor padding_bias(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& mask) const;
  /// [B, T, n*D] -> n tensors of [B, H, T, Dh]
  std::vector<torch::Tensor> split_heads(const torch::Tensor& projected, int64_t n) const;
  /// Attention over the projections queries [B, T, nq*D] and memory [B, S, nk*D] (q, k, v at
  /// `columns`), then W^O: through head_attention() in bf16 training on the CPU, else through
  /// split_heads() and attend_heads().
  torch::Tensor attend_projections(const torch::Tensor& queries, const torch::Tensor& memory, HeadColumns columns,
                                   const torch::Tensor& mask, torch::Tensor* weights);
};
TORCH_MODULE(MultiHeadAttention);

}  // namespace tfm
