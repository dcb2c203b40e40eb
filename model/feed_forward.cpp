#include "model/feed_forward.h"

#include <torch/torch.h>

#include "model/dropout.h"
#include "model/parameter_init.h"

namespace tfm {

FeedForwardImpl::FeedForwardImpl(const FeedForwardOptions& options_)
    : w1(register_module("w1", Linear(LinearOptions(options_.d_model(), options_.d_ff())))),
      w2(register_module("w2", Linear(LinearOptions(options_.d_ff(), options_.d_model())))),
      options(options_) {
  if (parameter_init_skipped()) return;
  torch::NoGradGuard no_grad;
  for (auto* layer : {&w1, &w2}) {
    torch::nn::init::xavier_uniform_((*layer)->weight);
    (*layer)->bias.zero_();
  }
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  const auto hidden = apply_dropout(w1->forward_relu(x), options.relu_dropout(), is_training());  // [B, T, d_ff]
  return w2(hidden);
}

}  // namespace tfm
