#include "app/runtime_options.h"

#include "runtime/device.h"

namespace tfm {

void add_runtime_options(CLI::App& command, RuntimeOptions& options) {
  command.add_option("--device", options.device, "cpu, cuda, cuda:N, or auto (CUDA when usable)")
      ->capture_default_str();
}

torch::Device resolve(const RuntimeOptions& options) { return resolve_device(options.device); }

torch::Device decoding_device(const RuntimeOptions& options, const torch::Device& resolved, bool int8) {
  return int8 && options.device == "auto" ? torch::Device(torch::kCPU) : resolved;
}

}  // namespace tfm
