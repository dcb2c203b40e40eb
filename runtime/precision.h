#pragma once
#include <string>

#include <torch/types.h>

namespace tfm {

/// Arithmetic precision of training and inference (--dtype). Weights stay float32 for training
/// (autocast computes matmuls in the lower precision); inference may convert weights outright.
enum class Precision { kFloat32, kBFloat16, kFloat16 };

/// "float32" | "bfloat16" | "float16" (also "fp32", "bf16", "fp16"); std::invalid_argument otherwise.
Precision parse_precision(const std::string& name);
std::string to_string(Precision precision);
torch::ScalarType scalar_type(Precision precision);

/// What the hardware offers for reduced precision: the inputs of choose_precision().
struct PrecisionSupport {
  bool cpu_bf16_native = false;     // AVX512-BF16 or AMX
  bool cuda_bf16 = false;           // the CUDA device computes in bf16 natively (compute capability >= 8.0)
  bool cpu_tiles_withheld = false;  // the CPU has AMX-BF16 whose tiles this process cannot use (not native then)
};
PrecisionSupport probe_precision_support();

/// The precision a command runs in, why, and (for an explicit choice the hardware only emulates)
/// a warning naming the expected slow-down.
struct PrecisionChoice {
  Precision precision = Precision::kFloat32;
  std::string reason;   // one line for the log
  std::string warning;  // empty unless the choice is known to be slow here
};

/// --dtype `requested`: "auto" picks bfloat16 where it is native (a CUDA device with bf16, or a CPU
/// with AVX512-BF16/AMX) and float32 otherwise; a precision name is taken as asked (float16 only on
/// CUDA: std::invalid_argument otherwise). Pure: depends on its arguments only, so it is tested
/// over every combination whatever machine runs the tests.
PrecisionChoice choose_precision(const std::string& requested, const torch::Device& device,
                                 const PrecisionSupport& support);

/// Throws std::invalid_argument where the device cannot run `precision` at all (float16 on CPU).
/// bfloat16 on a CPU without native support works but is slow; callers warn about it.
void check_supported(Precision precision, const torch::Device& device);

/// Mixed precision for the current thread while alive: matmuls and attention in bf16/fp16,
/// reductions and softmax in float32, as LibTorch's autocast decides. No-op for float32.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, Precision precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  torch::DeviceType device_type_;
  bool active_ = false;
  bool was_enabled_ = false;
  torch::ScalarType previous_dtype_ = torch::kFloat32;
};

}  // namespace tfm
