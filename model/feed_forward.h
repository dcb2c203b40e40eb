#pragma once
#include <cstdint>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/linear.h"

namespace tfm {

struct FeedForwardOptions {
  FeedForwardOptions(int64_t d_model, int64_t d_ff) : d_model_(d_model), d_ff_(d_ff) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, d_ff);
  TORCH_ARG(double, relu_dropout) = 0.0;  // on the hidden layer (not in the paper)
};

/// §3.3 Position-wise Feed-Forward Network: FFN(x) = max(0, x W1 + b1) W2 + b2.
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const FeedForwardOptions& options);
  /// x: [B, T, D] -> [B, T, D]
  torch::Tensor forward(const torch::Tensor& x);

  Linear w1{nullptr};  // [d_ff, D]
  Linear w2{nullptr};  // [D, d_ff]

  FeedForwardOptions options;
};
TORCH_MODULE(FeedForward);

}  // namespace tfm
