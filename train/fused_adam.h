#pragma once
#include <vector>

#include <torch/optim/adam.h>
#include <torch/types.h>

namespace tfm {

/// One Adam step (§5.3) over every parameter with a gradient, through LibTorch's multi-tensor
/// fused kernel (at::_fused_adam_: one pass over each parameter for the moments and the update,
/// instead of a handful of element-wise ops per tensor). The moments and step counts live in
/// `optimizer`'s own state, so checkpoints save and restore them exactly as for Adam::step(),
/// and the result equals Adam::step() up to float rounding (tested).
void fused_adam_step(torch::optim::Adam& optimizer);

/// The gradients of `parameters` (those that have one).
std::vector<torch::Tensor> gradients_of(const std::vector<torch::Tensor>& parameters);

/// Scales `gradients` in place by `scale`, then, when max_norm > 0, by min(1, max_norm / total
/// L2 norm) as torch::nn::utils::clip_grad_norm_ does, but with the norm kept on the device, so
/// an update never waits for the device to report it.
void scale_and_clip_gradients(std::vector<torch::Tensor>& gradients, double scale, double max_norm);

}  // namespace tfm
