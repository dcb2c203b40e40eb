#pragma once
#include <cstdint>

#include <ATen/core/ivalue.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/packed_weight.h"

namespace tfm {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);
  TORCH_ARG(int64_t, out_features);
};

/// y = x W^T + b, as torch::nn::Linear (same parameter names, so checkpoints are unchanged), with
/// an optional int8 path for inference: quantize_int8() packs W once as int8 with one scale per
/// output row (FBGEMM through LibTorch's quantized::linear_dynamic), and forward() then quantizes
/// the activations per call (7-bit range, which AVX2's int8 multiply-add cannot overflow) and
/// accumulates in int32. CPU only; training and CUDA keep the float path.
class LinearImpl : public torch::nn::Module {
 public:
  explicit LinearImpl(const LinearOptions& options);
  /// x: [..., in] -> [..., out]
  torch::Tensor forward(const torch::Tensor& x);
  /// Packs the current weights for the int8 path (call after loading them). Throws
  /// std::invalid_argument unless the weights are float32 on the CPU.
  void quantize_int8();
  bool is_quantized() const { return !packed_.isNone(); }
  /// CPU inference in float32 or bfloat16: lays W out once for oneDNN (model/packed_weight.h);
  /// forward() then uses it. The weights must not change afterwards. No-op where unsupported.
  void pack_for_inference();
  bool is_packed() const { return packed_weight_.defined(); }

  LinearOptions options;
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out]

 private:
  c10::IValue packed_;          // FBGEMM's packed int8 weight and bias, when quantized
  PackedWeight packed_weight_;  // oneDNN's layout of W, when packed for inference
};
TORCH_MODULE(Linear);

/// Packs every Linear inside `module` for int8 inference (see LinearImpl::quantize_int8).
void quantize_linear_layers_int8(torch::nn::Module& module);
/// Packs every Linear inside `module` for oneDNN (see LinearImpl::pack_for_inference).
void pack_linear_layers(torch::nn::Module& module);

}  // namespace tfm
