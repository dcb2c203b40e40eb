#include "model/linear.h"

#include <cmath>
#include <stdexcept>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "text/option_names.h"

namespace tfm {
namespace {

/// LibTorch marks its quantized-tensor constructors deprecated and warns on first use; tfm
/// depends on the pinned wheel where they work, so the warning would only alarm users.
class SilentWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

c10::OperatorHandle op(const char* name) { return c10::Dispatcher::singleton().findSchemaOrThrow(name, ""); }

}  // namespace

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  weight = register_parameter("weight", torch::empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", torch::empty({options.out_features()}));
  // torch::nn::Linear's initialisation: kaiming-uniform weights, bias uniform in +-1/sqrt(in).
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.in_features()));
  torch::nn::init::uniform_(bias, -bound, bound);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  if (packed_weight_.defined()) return packed_weight_.linear(x, bias);
  if (packed_.isNone()) return torch::nn::functional::linear(x, weight, bias);
  static const c10::OperatorHandle linear_dynamic = op("quantized::linear_dynamic");
  torch::jit::Stack stack{x.contiguous(), packed_, /*reduce_range=*/true};
  linear_dynamic.callBoxed(&stack);
  return stack[0].toTensor();
}

void LinearImpl::quantize_int8() {
  if (!weight.device().is_cpu() || weight.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument("int8 inference needs float32 weights on the CPU (" + option_name("quantize") +
                                " int8 with " + option_name("dtype") + " float32 " + option_name("device") + " cpu)");
  }
  torch::NoGradGuard no_grad;
  SilentWarnings silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
  // One scale per output row: rows of W differ in range, and per-row scales keep small rows exact.
  const auto scales = (weight.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kDouble);  // [out]
  const auto zero_points = torch::zeros({weight.size(0)}, torch::kLong);
  const auto qweight = torch::quantize_per_channel(weight, scales, zero_points, 0, torch::kQInt8);
  static const c10::OperatorHandle prepack = op("quantized::linear_prepack");
  torch::jit::Stack stack{qweight, c10::optional<torch::Tensor>(bias)};
  prepack.callBoxed(&stack);
  packed_ = stack[0];
}

void LinearImpl::pack_for_inference() {
  if (is_quantized() || !PackedWeight::supported(weight)) return;
  packed_weight_ = PackedWeight(weight);
}

void pack_linear_layers(torch::nn::Module& module) {
  for (const auto& child : module.modules(/*include_self=*/true)) {
    if (auto* linear = child->as<LinearImpl>()) linear->pack_for_inference();
  }
}

void quantize_linear_layers_int8(torch::nn::Module& module) {
  for (const auto& child : module.modules(/*include_self=*/true)) {
    if (auto* linear = child->as<LinearImpl>()) linear->quantize_int8();
  }
}

}  // namespace tfm
