#include "model/feed_forward.h"

#include <torch/torch.h>

#include "model/parameter_init.h"
#include "model/relu_dropout.h"

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
  // [B, T, d_ff]; inference takes relu inside prepared products
  const auto hidden = is_training() ? relu_dropout(w1(x), options.relu_dropout(), true) : w1->forward_relu(x);
  return w2(hidden);
}

}  // namespace tfm
