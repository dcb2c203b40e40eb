#pragma once
#include <string>

namespace tfm {

/// LibTorch's CUDA half (libtorch_cuda, and through it cuBLAS, cuDNN, NCCL...) is not linked into tfm:
/// a CPU run would map several hundred MB of GPU libraries it never uses. It is opened here, once,
/// when a command asks for a CUDA device, or for `auto` on a machine with an NVIDIA driver.
struct CudaLibraryStatus {
  bool loaded = false;
  std::string reason;  // why not, when not loaded (one line, for error messages and --version)
};

/// Loads libtorch_cuda (from beside libtorch_cpu) if this machine has an NVIDIA driver; idempotent
/// and thread-safe. Must run before anything asks LibTorch about CUDA: LibTorch fixes its CUDA hooks
/// on the first question (torch::cuda::is_available, manual_seed...) and never looks again.
const CudaLibraryStatus& load_cuda_library();

}  // namespace tfm
