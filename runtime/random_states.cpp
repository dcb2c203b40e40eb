#include "runtime/random_states.h"

#include <algorithm>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/cuda.h>

namespace tfm {
namespace {

at::Generator cuda_generator(size_t device) {
  return at::globalContext().defaultGenerator(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device)));
}

size_t cuda_devices() { return torch::cuda::is_available() ? torch::cuda::device_count() : 0; }

}  // namespace

torch::Tensor cpu_random_state() {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_cpu_random_state(const torch::Tensor& state) {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state.to(torch::kCPU));
}

std::vector<torch::Tensor> cuda_random_states() {
  std::vector<torch::Tensor> states;
  for (size_t i = 0; i < cuda_devices(); ++i) {
    auto generator = cuda_generator(i);
    std::lock_guard<std::mutex> lock(generator.mutex());
    states.push_back(generator.get_state());
  }
  return states;
}

void set_cuda_random_states(const std::vector<torch::Tensor>& states) {
  for (size_t i = 0; i < std::min(states.size(), cuda_devices()); ++i) {
    auto generator = cuda_generator(i);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(states[i].to(torch::kCPU));
  }
}

KeepRandomStates::KeepRandomStates() : cpu_(cpu_random_state()), cuda_(cuda_random_states()) {}

KeepRandomStates::~KeepRandomStates() {
  set_cpu_random_state(cpu_);
  set_cuda_random_states(cuda_);
}

}  // namespace tfm
