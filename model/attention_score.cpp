#include "model/attention_score.h"

#include <cmath>

#include <torch/torch.h>

namespace tfm {

AttentionScorerImpl::AttentionScorerImpl(const AttentionScorerOptions& options)
    : kind_(options.kind()), head_dim_(options.head_dim()) {
  const auto kind = options.kind();
  const int64_t heads = options.heads();
  const int64_t head_dim = options.head_dim();
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  switch (kind) {
    case AttentionScore::kGeneral:
      // W = I / sqrt(Dh) starts out as the paper's scaled dot product.
      bilinear_ = register_parameter("bilinear", torch::eye(head_dim).repeat({heads, 1, 1}) * scale);
      break;
    case AttentionScore::kAdditive:
      query_proj_ = register_parameter("query_proj", torch::randn({heads, head_dim, head_dim}) * scale);
      key_proj_ = register_parameter("key_proj", torch::randn({heads, head_dim, head_dim}) * scale);
      energy_ = register_parameter("energy", torch::randn({heads, head_dim}) * scale);
      break;
    case AttentionScore::kCosine:
      // Cosines lie in [-1, 1]; a sharpness of sqrt(Dh) gives logits of the same range as q·k/sqrt(Dh)
      // for unit-variance vectors, so the softmax is not near-uniform at the start.
      sharpness_ = register_parameter("sharpness", torch::full({heads}, std::sqrt(static_cast<double>(head_dim))));
      break;
    case AttentionScore::kScaledDot:
    case AttentionScore::kDot: break;
  }
}

torch::Tensor AttentionScorerImpl::forward(const torch::Tensor& q, const torch::Tensor& k) {
  switch (kind_) {
    case AttentionScore::kScaledDot:
      // Scaling q ([B,H,T,Dh]) is cheaper than scaling the scores ([B,H,T,S]).
      return torch::matmul(q / std::sqrt(static_cast<double>(head_dim_)), k.transpose(-2, -1));
    case AttentionScore::kDot: return torch::matmul(q, k.transpose(-2, -1));
    case AttentionScore::kGeneral: return torch::matmul(torch::matmul(q, bilinear_), k.transpose(-2, -1));  // (q W) k^T
    case AttentionScore::kAdditive: return additive(q, k);
    case AttentionScore::kCosine: {
      const auto qn = torch::nn::functional::normalize(q, torch::nn::functional::NormalizeFuncOptions().dim(-1));
      const auto kn = torch::nn::functional::normalize(k, torch::nn::functional::NormalizeFuncOptions().dim(-1));
      return torch::matmul(qn, kn.transpose(-2, -1)) * sharpness_.view({1, -1, 1, 1});
    }
  }
  TORCH_CHECK(false, "unknown attention score");
}

torch::Tensor AttentionScorerImpl::additive(const torch::Tensor& q, const torch::Tensor& k) {
  const auto projected_q = torch::matmul(q, query_proj_);  // [B, H, T, Dh]
  const auto projected_k = torch::matmul(k, key_proj_);    // [B, H, S, Dh]
  // [B, H, T, 1, Dh] + [B, H, 1, S, Dh] -> [B, H, T, S, Dh]: memory grows with T*S*Dh,
  // which is why the paper prefers dot products (§3.2.1).
  const auto hidden = torch::tanh(projected_q.unsqueeze(3) + projected_k.unsqueeze(2));
  return torch::matmul(hidden, energy_.view({1, -1, 1, head_dim_, 1})).squeeze(-1);  // [B, H, T, S]
}

}  // namespace tfm
