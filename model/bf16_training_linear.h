#pragma once
#include <torch/types.h>

namespace tfm {

/// y = x W^T + b as bf16 autocast computes it on the CPU (training's and validation's forward
/// passes: buckets_product_rows(x)), with a forward and backward of its own:
/// - the products run over x's rows padded with zeros to bucketed_row_count(rows), so that
///   oneDNN meets a bounded set of shapes (model/bucketed_rows.h); the padding's outputs are
///   dropped and its gradients are zero;
/// - the bias is added inside oneDNN's product (mkldnn::_linear_pointwise), not copied into the
///   output before it as addmm does;
/// - the weight gradient is (g^T) x with g^T laid out by pad_and_transpose_gradient, which also
///   gives the bias gradient, instead of a product over a transposed operand and a sum over dim 0.
/// - W's bfloat16 copy comes from the thread's UseBf16WeightCopies where there is one.
/// `bias` may be undefined (no bias). x: [..., in] float32 or bfloat16, weight: [out, in],
/// bias: [out] -> [..., out] bfloat16; gradients in each input's own dtype.
torch::Tensor bf16_training_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace tfm
