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
