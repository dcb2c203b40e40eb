#include "app/runtime_options.h"

#include "runtime/device.h"

namespace tfm {

void add_runtime_options(CLI::App& command, RuntimeOptions& options) {
  command.add_option("--device", options.device, "cpu, cuda, cuda:N, or auto (CUDA when usable)")
      ->capture_default_str();
}

torch::Device resolve(const RuntimeOptions& options) { return resolve_device(options.device); }

}  // namespace tfm
