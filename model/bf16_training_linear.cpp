#include "model/bf16_training_linear.h"

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/torch.h>

#include "model/bf16_weight_copies.h"
#include "model/bucketed_rows.h"
#include "model/gradient_transpose.h"

namespace tfm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// x's rows as a contiguous [padded, in] bfloat16 matrix, zero rows after them.
torch::Tensor padded_bf16_rows(const torch::Tensor& x, int64_t rows, int64_t padded) {
  const auto x_rows = x.reshape({rows, x.size(-1)});  // [rows, in]
  if (padded == rows && x_rows.scalar_type() == torch::kBFloat16) return x_rows.contiguous();
  auto result = torch::empty({padded, x_rows.size(1)}, x_rows.options().dtype(torch::kBFloat16));
  result.narrow(0, 0, rows).copy_(x_rows);  // the cast and the copy in one pass
  if (padded > rows) result.narrow(0, rows, padded - rows).zero_();
  return result;
}

/// The first rows of a contiguous [padded, out] product in the shape `sizes`, as a tensor of its
/// own over the same memory: a view made in a custom Function's forward would not carry the
/// Function's gradient (and autograd forbids changing it in place).
torch::Tensor output_rows(const torch::Tensor& product, const std::vector<int64_t>& sizes) {
  auto result = torch::empty({0}, product.options());
  result.set_(product.storage(), product.storage_offset(), sizes, c10::contiguous_strides(sizes));
  return result;
}

/// `bias` optional, since a Function takes no undefined tensor.
class Bf16TrainingLinear : public torch::autograd::Function<Bf16TrainingLinear> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const std::optional<torch::Tensor>& maybe_bias) {
    const torch::Tensor bias = maybe_bias.value_or(torch::Tensor());
    static const c10::OperatorHandle linear_pointwise =
        c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_linear_pointwise", "");
    const int64_t in = x.size(-1), rows = x.numel() / in, padded = bucketed_row_count(rows);
    const auto x16 = padded_bf16_rows(x, rows, padded);  // [padded, in]
    Bf16WeightCopies* copies = UseBf16WeightCopies::current();
    const auto w16 = copies != nullptr ? copies->get(weight) : weight.to(torch::kBFloat16);  // [out, in]
    std::optional<torch::Tensor> b16;
    if (bias.defined()) b16 = bias.to(torch::kBFloat16);
    torch::jit::Stack stack{
        x16, w16, b16, std::string("none"), c10::List<std::optional<c10::Scalar>>(), std::optional<std::string>("")};
    linear_pointwise.callBoxed(&stack);
    const auto y = stack[0].toTensor();  // [padded, out]
    ctx->save_for_backward({x16, w16});
    ctx->saved_data["rows"] = rows;
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    ctx->saved_data["x_dtype"] = x.scalar_type();
    ctx->saved_data["weight_dtype"] = weight.scalar_type();
    ctx->saved_data["bias"] = bias.defined();
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    return output_rows(y, sizes);  // [..., out]
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& x16 = saved[0];  // [padded, in]
    const auto& w16 = saved[1];  // [out, in]
    const int64_t rows = ctx->saved_data["rows"].toInt(), out = w16.size(0);
    const bool bias = ctx->saved_data["bias"].toBool();
    const auto g = grad_outputs[0].reshape({rows, out}).to(torch::kBFloat16).contiguous();  // [rows, out]
    const PaddedGradient padded = pad_and_transpose_gradient(g, x16.size(0), bias && ctx->needs_input_grad(2));
    torch::Tensor grad_x, grad_weight;
    if (ctx->needs_input_grad(0)) {
      grad_x = padded.rows.mm(w16)
                   .narrow(0, 0, rows)
                   .view(ctx->saved_data["x_sizes"].toIntVector())
                   .to(ctx->saved_data["x_dtype"].toScalarType());  // [..., in]
    }
    if (ctx->needs_input_grad(1)) {
      grad_weight = padded.transposed.mm(x16).to(ctx->saved_data["weight_dtype"].toScalarType());  // [out, in]
    }
    return {grad_x, grad_weight, padded.column_sums};
  }
};

}  // namespace

torch::Tensor bf16_training_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return Bf16TrainingLinear::apply(x, weight, bias.defined() ? std::optional<torch::Tensor>(bias) : std::nullopt);
}

}  // namespace tfm
