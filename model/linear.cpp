#include "model/linear.h"

#include <cmath>

#include <torch/torch.h>

#include "model/bf16_training_linear.h"
#include "model/bucketed_rows.h"
#include "model/parameter_init.h"
#include "runtime/kernels.h"
#include "runtime/parallel_jobs.h"

namespace tfm {

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  weight = register_parameter("weight", torch::empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", torch::empty({options.out_features()}));
  if (parameter_init_skipped()) return;
  // torch::nn::Linear's initialisation: kaiming-uniform weights, bias uniform in +-1/sqrt(in).
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.in_features()));
  torch::nn::init::uniform_(bias, -bound, bound);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  if (prepared_.defined()) return prepared_.linear(x);
  if (buckets_product_rows(x) && fused_kernels()) return bf16_training_linear(x, weight, bias);
  // ATen's linear, not the C++ frontend's: for a [B, T, in] input it is one addmm with the bias
  // in the product. The frontend's matmul then += bias added the bias in a pass of its own.
  return torch::linear(x, weight, bias);
}

torch::Tensor LinearImpl::forward_relu(const torch::Tensor& x) {
  if (prepared_.defined()) return prepared_.linear_relu(x);
  return torch::relu(forward(x));
}

void LinearImpl::quantize_int8() {
  if (is_quantized()) return;  // from an int8 model file (load_int8): its float weight is gone
  prepared_ = PreparedWeight(PreparedWeight::Form::kInt8, weight, bias);
}

void LinearImpl::load_int8(const Int8Rows& rows) {
  TORCH_CHECK(rows.values.defined() && rows.values.size(0) == options.out_features() &&
                  rows.values.size(1) == options.in_features(),
              "Linear::load_int8: rows of another shape");
  prepared_ = PreparedWeight(rows, bias, /*keep_int8_rows=*/false);
  drop_float_weight();
}

void LinearImpl::pack_for_inference() {
  if (is_quantized() || !PackedWeight::supported(weight)) return;
  prepared_ = PreparedWeight(PreparedWeight::Form::kOneDnn, weight, bias);
}

void LinearImpl::drop_float_weight() {
  TORCH_CHECK(prepared_.defined(), "Linear::drop_float_weight: the layer is not prepared for inference");
  // In place, so that the module's parameter list and this member stay one tensor.
  weight.set_data(torch::empty({0}, weight.options()));
}

namespace {

/// prepare(layer) for every Linear inside `module`, side by side: a layer's preparation is mostly
/// serial work (FBGEMM's packing, the int8 rounding), so one layer at a time left every core but
/// one idle while a model loaded.
template <typename Prepare>
void prepare_linear_layers(torch::nn::Module& module, Prepare prepare) {
  std::vector<CostedJob> jobs;
  for (const auto& child : module.modules(/*include_self=*/true)) {
    auto* linear = child->as<LinearImpl>();
    if (linear != nullptr) jobs.push_back({linear->weight.numel(), [linear, prepare] { prepare(*linear); }});
  }
  run_costliest_first(std::move(jobs));
}

}  // namespace

void pack_linear_layers(torch::nn::Module& module, FloatWeights float_weights) {
  prepare_linear_layers(module, [float_weights](LinearImpl& linear) {
    linear.pack_for_inference();
    if (float_weights == FloatWeights::kDrop && linear.is_packed()) linear.drop_float_weight();
  });
}

void quantize_linear_layers_int8(torch::nn::Module& module, FloatWeights float_weights) {
  prepare_linear_layers(module, [float_weights](LinearImpl& linear) {
    linear.quantize_int8();
    if (float_weights == FloatWeights::kDrop) linear.drop_float_weight();
  });
}

void add_prepared_memory_of_linear_layers(torch::nn::Module& module, std::vector<MemoryRange>& ranges) {
  for (const auto& child : module.modules(/*include_self=*/true)) {
    if (const auto* linear = child->as<LinearImpl>()) linear->add_prepared_memory(ranges);
  }
}

}  // namespace tfm
