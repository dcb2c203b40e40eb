#include "model/feed_forward.h"

#include <torch/torch.h>

namespace tfm {

FeedForwardImpl::FeedForwardImpl(int64_t d_model, int64_t d_ff, double relu_dropout)
    : w1(register_module("w1", torch::nn::Linear(d_model, d_ff))),
      w2(register_module("w2", torch::nn::Linear(d_ff, d_model))),
      relu_dropout_(relu_dropout) {
  torch::NoGradGuard no_grad;
  for (auto* layer : {&w1, &w2}) {
    torch::nn::init::xavier_uniform_((*layer)->weight);
    (*layer)->bias.zero_();
  }
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  const auto hidden = torch::dropout(torch::relu(w1(x)), relu_dropout_, is_training());  // [B, T, d_ff]
  return w2(hidden);
}

}  // namespace tfm
