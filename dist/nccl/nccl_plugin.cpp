// libtfm_nccl.so: NCCL's construction, kept out of tfm itself because ProcessGroupNCCL lives in
// libtorch_cuda, which a CPU run must not map. dist/nccl_backend.cpp opens this after LibTorch's
// CUDA half; everything after construction runs through c10d::Backend, shared with Gloo.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "dist/backend_factory.h"

extern "C" __attribute__((visibility("default"))) c10::intrusive_ptr<c10d::Backend> tfm_make_nccl_backend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

// Checked where both are compiled: the signature dist/nccl_backend.cpp calls through.
static_assert(std::is_same_v<decltype(&tfm_make_nccl_backend), tfm::MakeBackendFunction>);
