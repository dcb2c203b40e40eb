#pragma once
#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace tfm {

/// §3.3 Position-wise Feed-Forward Network: FFN(x) = max(0, x W1 + b1) W2 + b2.
class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t d_model, int64_t d_ff, double relu_dropout);
  /// x: [B, T, D] -> [B, T, D]
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear w1{nullptr};  // [d_ff, D]
  torch::nn::Linear w2{nullptr};  // [D, d_ff]

 private:
  double relu_dropout_;
};
TORCH_MODULE(FeedForward);

}  // namespace tfm
