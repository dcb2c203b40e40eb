#include "runtime/precision.h"

#include <stdexcept>

#include <ATen/autocast_mode.h>

#include "runtime/capabilities.h"
#include "text/option_names.h"

namespace tfm {

Precision parse_precision(const std::string& name) {
  if (name == "float32" || name == "fp32") return Precision::kFloat32;
  if (name == "bfloat16" || name == "bf16") return Precision::kBFloat16;
  if (name == "float16" || name == "fp16") return Precision::kFloat16;
  throw std::invalid_argument(option_name("dtype") + " " + name + ": expected float32, bfloat16 or float16");
}

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::kFloat32: return "float32";
    case Precision::kBFloat16: return "bfloat16";
    case Precision::kFloat16: return "float16";
  }
  return "?";
}

torch::ScalarType scalar_type(Precision precision) {
  switch (precision) {
    case Precision::kFloat32: return torch::kFloat32;
    case Precision::kBFloat16: return torch::kBFloat16;
    case Precision::kFloat16: return torch::kFloat16;
  }
  return torch::kFloat32;
}

void check_supported(Precision precision, const torch::Device& device) {
  if (precision == Precision::kFloat16 && !device.is_cuda()) {
    throw std::invalid_argument(option_name("dtype") + " float16 needs a CUDA device; on CPU use bfloat16 or float32");
  }
}

/// Why a CPU with AMX-BF16 but no usable tiles counts as without native bfloat16.
constexpr const char* kTilesWithheld =
    "the CPU's AMX tiles are not usable by this process, and on such CPUs AVX512-BF16 alone multiplies bfloat16 "
    "slower than float32 (BENCHMARKS.md)";

PrecisionSupport probe_precision_support() {
  const Capabilities caps = probe_capabilities();
  return {caps.cpu_bf16, caps.cuda_bf16, caps.cpu_tiles_withheld};
}

PrecisionChoice choose_precision(const std::string& requested, const torch::Device& device,
                                 const PrecisionSupport& support) {
  const bool cuda = device.is_cuda();
  const bool bf16_native = cuda ? support.cuda_bf16 : support.cpu_bf16_native;
  const std::string where = cuda ? "the CUDA device" : "the CPU";
  PrecisionChoice choice;
  if (requested == "auto") {
    choice.precision = bf16_native ? Precision::kBFloat16 : Precision::kFloat32;
    choice.reason = bf16_native ? option_name("dtype") + " auto: bfloat16, since " + where + " computes it natively"
                                : option_name("dtype") + " auto: float32, since " + where + " has no native bfloat16" +
                                      (cuda                         ? std::string()
                                       : support.cpu_tiles_withheld ? " (" + std::string(kTilesWithheld) + ")"
                                                                    : std::string(" (no AVX512-BF16 or AMX)"));
    return choice;
  }
  choice.precision = parse_precision(requested);
  check_supported(choice.precision, device);
  choice.reason = option_name("dtype") + " " + to_string(choice.precision) + " as asked";
  if (choice.precision == Precision::kBFloat16 && !bf16_native) {
    choice.warning = cuda ? option_name("dtype") +
                                " bfloat16: this CUDA device has no native bfloat16 and emulates it, which "
                                "is slower than float32; " +
                                option_name("dtype") + " auto picks the fast precision"
                     : support.cpu_tiles_withheld
                         ? option_name("dtype") + " bfloat16: " + kTilesWithheld + "; " + option_name("dtype") +
                               " auto picks float32 here"
                         : option_name("dtype") +
                               " bfloat16: this CPU has no AVX512-BF16 or AMX and emulates bfloat16, about "
                               "3x slower than float32 (measured on these machines); " +
                               option_name("dtype") + " auto picks float32 here";
  }
  return choice;
}

AutocastGuard::AutocastGuard(const torch::Device& device, Precision precision) : device_type_(device.type()) {
  if (precision == Precision::kFloat32) return;
  active_ = true;
  was_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_dtype(device_type_, scalar_type(precision));
  at::autocast::set_autocast_enabled(device_type_, true);
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_type_, was_enabled_);
  at::autocast::set_autocast_dtype(device_type_, previous_dtype_);
  if (!was_enabled_) at::autocast::clear_cache();  // drop the bf16 copies of the weights
}

}  // namespace tfm
