#include "runtime/device.h"

#include <stdexcept>

#include <torch/cuda.h>

#include "runtime/cuda_library.h"
#include "text/option_names.h"

namespace tfm {
namespace {

int parse_cuda_index(const std::string& spec) {
  const std::string digits = spec.substr(5);  // after "cuda:"
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument(option_name("device") + " " + spec + ": expected cuda:N with N a device number");
  }
  return std::stoi(digits);
}

}  // namespace

torch::Device resolve_device(const std::string& spec) {
  if (spec == "cpu") return torch::Device(torch::kCPU);
  const CudaLibraryStatus& cuda = load_cuda_library();
  if (spec == "auto") {
    return cuda.loaded && torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  }
  if (spec != "cuda" && spec.rfind("cuda:", 0) != 0) {
    throw std::invalid_argument(option_name("device") + " " + spec + ": expected cpu, cuda, cuda:N or auto");
  }
  const int index = spec == "cuda" ? 0 : parse_cuda_index(spec);
  if (!cuda.loaded) {
    throw std::invalid_argument(option_name("device") + " " + spec + ": CUDA is not usable here: " + cuda.reason +
                                "; use " + option_name("device") + " cpu");
  }
  if (!torch::cuda::is_available()) {
    throw std::invalid_argument(option_name("device") + " " + spec +
                                ": CUDA is not usable on this machine (no GPU or driver); use " +
                                option_name("device") + " cpu");
  }
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (index >= count) {
    throw std::invalid_argument(option_name("device") + " " + spec + ": only " + std::to_string(count) +
                                " CUDA device(s) here (cuda:0 .. cuda:" + std::to_string(count - 1) + ")");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace tfm
