#include "model/int8_weight.h"

#include <optional>
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

Int8Weight::Int8Weight(const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!weight.device().is_cpu() || weight.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument("int8 inference needs float32 weights on the CPU (" + option_name("quantize") +
                                " int8 with " + option_name("dtype") + " float32 " + option_name("device") + " cpu)");
  }
  torch::NoGradGuard no_grad;
  SilentWarnings silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
  const auto rows = weight.detach().contiguous();
  const auto scales = (rows.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kDouble);  // [out]
  const auto zero_points = torch::zeros({rows.size(0)}, torch::kLong);
  const auto qweight = torch::quantize_per_channel(rows, scales, zero_points, 0, torch::kQInt8);
  static const c10::OperatorHandle prepack = op("quantized::linear_prepack");
  std::optional<torch::Tensor> maybe_bias;
  if (bias.defined()) maybe_bias = bias.detach();
  torch::jit::Stack stack{qweight, maybe_bias};
  prepack.callBoxed(&stack);
  packed_ = stack[0];
}

torch::Tensor Int8Weight::linear(const torch::Tensor& x) const {
  static const c10::OperatorHandle linear_dynamic = op("quantized::linear_dynamic");
  torch::jit::Stack stack{x.contiguous(), packed_, /*reduce_range=*/true};
  linear_dynamic.callBoxed(&stack);
  return stack[0].toTensor();
}

}  // namespace tfm
