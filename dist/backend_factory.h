#pragma once
#include <chrono>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace tfm {

/// Each backend's construction, the only code that differs between them (dist/distributed_group.cpp
/// runs every collective through c10d::Backend's interface).

/// Gloo, compiled into libtorch_cpu (dist/gloo_backend.cpp).
c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout);

/// NCCL, compiled into libtorch_cuda, which tfm opens only at run time: built by the plugin
/// libtfm_nccl.so (dist/nccl/), opened here after LibTorch's CUDA half (dist/nccl_backend.cpp).
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout);

/// The plugin's one entry point, looked up by name with dlsym.
using MakeBackendFunction = c10::intrusive_ptr<c10d::Backend> (*)(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                                  std::chrono::milliseconds);
inline constexpr const char* kNcclPluginSymbol = "tfm_make_nccl_backend";
inline constexpr const char* kNcclPluginFile = "libtfm_nccl.so";

}  // namespace tfm
