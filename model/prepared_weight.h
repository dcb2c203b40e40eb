#pragma once
#include <optional>

#include <torch/types.h>

#include "model/int8_weight.h"
#include "model/packed_weight.h"

namespace tfm {

/// A weight [out, in] (and optional bias [out]) in the form that the kernel multiplying by it
/// wants, chosen once for inference: as stored (LibTorch's matmul), laid out for oneDNN
/// (model/packed_weight.h) or quantized to int8 for FBGEMM (model/int8_weight.h).
class PreparedWeight {
 public:
  enum class Form { kNone, kPlain, kOneDnn, kInt8 };

  PreparedWeight() = default;
  /// kOneDnn needs PackedWeight::supported(weight); kInt8 a float32 CPU weight, and with
  /// `keep_int8_rows` keeps the quantized rows readable (int8_rows(), blocked_rows()).
  PreparedWeight(Form form, const torch::Tensor& weight, const torch::Tensor& bias = {}, bool keep_int8_rows = false);
  /// kInt8 from a weight already quantized (Int8Weight's second constructor).
  PreparedWeight(const Int8Rows& rows, const torch::Tensor& bias, bool keep_int8_rows);

  bool defined() const { return form_ != Form::kNone; }
  Form form() const { return form_; }
  /// x: [..., in] -> x W^T + b, [..., out] (float32 for kInt8, else x's dtype)
  torch::Tensor linear(const torch::Tensor& x) const;
  /// max(0, linear(x)): fused into oneDNN's product for kOneDnn and into the dequantization for
  /// kInt8, in place on the product otherwise.
  torch::Tensor linear_relu(const torch::Tensor& x) const;
  /// The memory products read for kOneDnn (PackedWeight::add_memory), appended to `ranges`.
  void add_memory(std::vector<MemoryRange>& ranges) const;
  /// kOneDnn's PackedWeight::blocked_rows(); kInt8's kept rows (Int8Weight::rows()) as int8
  /// BlockedRows; none otherwise.
  std::optional<BlockedRows> blocked_rows() const;
  /// kInt8's kept rows; undefined otherwise.
  const Int8Rows& int8_rows() const { return int8_.rows(); }

 private:
  Form form_ = Form::kNone;
  torch::Tensor weight_, bias_;  // kPlain
  PackedWeight packed_;          // kOneDnn; bias_ too
  Int8Weight int8_;              // kInt8 (bias packed with it)
};

}  // namespace tfm
