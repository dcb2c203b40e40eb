#pragma once
#include <vector>

#include <torch/types.h>

namespace tfm {

/// LibTorch's default CPU generator's state, and setting it back.
torch::Tensor cpu_random_state();
void set_cpu_random_state(const torch::Tensor& state);

/// The default generator state of each CUDA device (none without CUDA), and setting them back
/// (the first min(states, devices) of them).
std::vector<torch::Tensor> cuda_random_states();
void set_cuda_random_states(const std::vector<torch::Tensor>& states);

/// Keeps the default generators' states across a scope that draws from them for something other
/// than training (validation builds a translator, whose model starts from random weights), so that
/// training's dropout masks do not depend on whether and when it validated: a run extended from a
/// checkpoint continues exactly as the uninterrupted run.
class KeepRandomStates {
 public:
  KeepRandomStates();
  ~KeepRandomStates();
  KeepRandomStates(const KeepRandomStates&) = delete;
  KeepRandomStates& operator=(const KeepRandomStates&) = delete;

 private:
  torch::Tensor cpu_;
  std::vector<torch::Tensor> cuda_;
};

}  // namespace tfm
