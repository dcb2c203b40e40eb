#pragma once
#include <cstdint>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/model_config.h"

namespace tfm {

/// How a query is compared with each key, per head: the compatibility function of §3.2.
/// Scaled dot-product is the paper's; the others are the alternatives it discusses.
struct AttentionScorerOptions {
  AttentionScorerOptions(AttentionScore kind, int64_t heads, int64_t head_dim)
      : kind_(kind), heads_(heads), head_dim_(head_dim) {}
  TORCH_ARG(AttentionScore, kind);
  TORCH_ARG(int64_t, heads);
  TORCH_ARG(int64_t, head_dim);  // Dh = d_k
};

class AttentionScorerImpl : public torch::nn::Module {
 public:
  explicit AttentionScorerImpl(const AttentionScorerOptions& options);

  /// q: [B, H, T, Dh], k: [B, H, S, Dh] -> scores [B, H, T, S] (before masking and softmax)
  torch::Tensor forward(const torch::Tensor& q, const torch::Tensor& k);

  AttentionScore kind() const { return kind_; }

 private:
  torch::Tensor additive(const torch::Tensor& q, const torch::Tensor& k);

  AttentionScore kind_;
  int64_t head_dim_;
  torch::Tensor bilinear_;    // general: W per head, [H, Dh, Dh]
  torch::Tensor query_proj_;  // additive: W_q per head, [H, Dh, Dh]
  torch::Tensor key_proj_;    // additive: W_k per head, [H, Dh, Dh]
  torch::Tensor energy_;      // additive: v per head, [H, Dh]
  torch::Tensor sharpness_;   // cosine: g per head, [H]
};
TORCH_MODULE(AttentionScorer);

}  // namespace tfm
