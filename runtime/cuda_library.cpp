#include "runtime/cuda_library.h"

#include <dlfcn.h>
#include <link.h>

#include <mutex>

namespace tfm {
namespace {

/// The directory of the loaded libtorch_cpu.so: libtorch_cuda.so sits beside it in the wheel.
std::string torch_library_directory() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string suffix = "/libtorch_cpu.so";
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
          *static_cast<std::string*>(out) = name.substr(0, name.size() - suffix.size());
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

std::string dl_error() {
  const char* message = dlerror();
  return message != nullptr ? message : "unknown error";
}

CudaLibraryStatus load() {
  // Without the driver's libcuda there is no GPU to use: stop before mapping any CUDA library.
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
    return {false, "no NVIDIA driver (libcuda.so.1 not found)"};
  }
  const std::string directory = torch_library_directory();
  if (directory.empty()) return {false, "cannot locate libtorch_cpu.so in this process"};
  const std::string path = directory + "/libtorch_cuda.so";
  // RTLD_GLOBAL: its static initializers register the CUDA hooks, allocator and kernels with
  // LibTorch, exactly as when it is linked.
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    return {
        false,
        "cannot load " + path + ": " + dl_error() +
            " (a CPU-only LibTorch install? run scripts/bootstrap --full)"};  // NOLINT(flag-name): the script's flag
  }
  return {true, ""};
}

}  // namespace

const CudaLibraryStatus& load_cuda_library() {
  static std::once_flag once;
  static CudaLibraryStatus status;
  std::call_once(once, [] { status = load(); });
  return status;
}

}  // namespace tfm
