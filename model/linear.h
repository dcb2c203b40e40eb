#pragma once
#include <cstdint>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/prepared_weight.h"

namespace tfm {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);
  TORCH_ARG(int64_t, out_features);
};

/// y = x W^T + b, as torch::nn::Linear (same parameter names, so checkpoints are unchanged), with
/// inference paths that prepare W once (model/prepared_weight.h): int8 for FBGEMM
/// (quantize_int8()) or oneDNN's layout (pack_for_inference()). CPU only; training and CUDA keep
/// the float path.
class LinearImpl : public torch::nn::Module {
 public:
  explicit LinearImpl(const LinearOptions& options);
  /// x: [..., in] -> [..., out]
  torch::Tensor forward(const torch::Tensor& x);
  /// max(0, forward(x)), in one pass over the product where the weights are prepared for inference.
  torch::Tensor forward_relu(const torch::Tensor& x);
  /// Packs the current weights for the int8 path (call after loading them). Throws
  /// std::invalid_argument unless the weights are float32 on the CPU.
  void quantize_int8();
  /// The int8 path from a weight already quantized (an int8 model file's), `bias` as loaded; the
  /// float weight is freed (drop_float_weight). quantize_int8() then leaves the layer as it is.
  void load_int8(const Int8Rows& rows);
  bool is_quantized() const { return prepared_.form() == PreparedWeight::Form::kInt8; }
  /// CPU inference in float32 or bfloat16: lays W out once for oneDNN (model/packed_weight.h);
  /// forward() then uses it. The weights must not change afterwards. No-op where unsupported.
  void pack_for_inference();
  bool is_packed() const { return prepared_.form() == PreparedWeight::Form::kOneDnn; }
  /// Once prepared (either call above), frees the float weight that only the prepared copy is
  /// read from now: `weight` becomes an empty tensor, so the layer can translate but no longer be
  /// trained, saved or prepared again. For a model kept only to translate (BENCHMARKS.md: what
  /// the float copy beside the prepared one costs).
  void drop_float_weight();
  /// The prepared weight's memory for kOneDnn, appended to `ranges` (PreparedWeight::add_memory).
  void add_prepared_memory(std::vector<MemoryRange>& ranges) const { prepared_.add_memory(ranges); }

  LinearOptions options;
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out]

 private:
  PreparedWeight prepared_;  // W for FBGEMM or oneDNN once prepared for inference, else undefined
};
TORCH_MODULE(Linear);

/// What becomes of a layer's float weight once it is prepared for inference.
enum class FloatWeights {
  kKeep,
  /// Dropped at once (LinearImpl::drop_float_weight), layer by layer: the memory each one frees
  /// holds the next layer's prepared copy, so the model's weights are never all held twice.
  kDrop,
};

/// Packs every Linear inside `module` for int8 inference (see LinearImpl::quantize_int8), the
/// layers side by side on LibTorch's threads (runtime/parallel_jobs.h: run_costliest_first).
void quantize_linear_layers_int8(torch::nn::Module& module, FloatWeights float_weights = FloatWeights::kKeep);
/// Packs every Linear inside `module` for oneDNN (see LinearImpl::pack_for_inference), the
/// layers side by side as in quantize_linear_layers_int8.
void pack_linear_layers(torch::nn::Module& module, FloatWeights float_weights = FloatWeights::kKeep);
/// Appends the prepared weights' memory of every Linear inside `module` to `ranges` (see
/// LinearImpl::add_prepared_memory).
void add_prepared_memory_of_linear_layers(torch::nn::Module& module, std::vector<MemoryRange>& ranges);

}  // namespace tfm
