#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "dist/backend_factory.h"
#include "runtime/cuda_library.h"
#include "text/option_names.h"

namespace tfm {
namespace {

/// The plugin sits beside the tfm executable (CMake builds both into one directory).
std::filesystem::path plugin_path() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return (error ? std::filesystem::path(".") : exe.parent_path()) / kNcclPluginFile;
}

}  // namespace

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout) {
  const auto& cuda = load_cuda_library();  // the plugin links libtorch_cuda: LibTorch's CUDA half first
  if (!cuda.loaded) throw std::invalid_argument(option_name("dist_backend") + " nccl needs CUDA: " + cuda.reason);
  const auto path = plugin_path();
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    const char* why = dlerror();
    throw std::invalid_argument(option_name("dist_backend") + " nccl: cannot load " + path.string() + ": " +
                                (why != nullptr ? why : "?") +
                                " (it is built when CMake finds the CUDA toolkit and NCCL's headers: "
                                "scripts/bootstrap --full, then rebuild)");  // NOLINT(flag-name): the script's flag
  }
  const auto make = reinterpret_cast<MakeBackendFunction>(dlsym(plugin, kNcclPluginSymbol));
  if (make == nullptr) throw std::runtime_error(path.string() + ": no " + kNcclPluginSymbol + " (stale build?)");
  return make(store, rank, size, timeout);
}

}  // namespace tfm
