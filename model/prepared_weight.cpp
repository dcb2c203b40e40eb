#include "model/prepared_weight.h"

#include <torch/torch.h>

namespace tfm {

PreparedWeight::PreparedWeight(Form form, const torch::Tensor& weight, const torch::Tensor& bias, bool keep_int8_rows)
    : form_(form) {
  switch (form) {
    case Form::kNone: break;
    case Form::kPlain:
      weight_ = weight;
      bias_ = bias;
      break;
    case Form::kOneDnn:
      packed_ = PackedWeight(weight);
      bias_ = bias;
      break;
    case Form::kInt8: int8_ = Int8Weight(weight, bias, keep_int8_rows); break;
  }
}

PreparedWeight::PreparedWeight(const Int8Rows& rows, const torch::Tensor& bias, bool keep_int8_rows)
    : form_(Form::kInt8), int8_(rows, bias, keep_int8_rows) {}

torch::Tensor PreparedWeight::linear(const torch::Tensor& x) const {
  switch (form_) {
    case Form::kPlain: return torch::nn::functional::linear(x, weight_, bias_);
    case Form::kOneDnn: return packed_.linear(x, bias_);
    case Form::kInt8: return int8_.linear(x);
    case Form::kNone: break;
  }
  TORCH_CHECK(false, "PreparedWeight::linear: no weight prepared");
}

std::optional<BlockedRows> PreparedWeight::blocked_rows() const {
  if (form_ == Form::kOneDnn) return packed_.blocked_rows();
  const Int8Rows& rows = int8_.rows();
  if (form_ != Form::kInt8 || !rows.defined()) return std::nullopt;
  const int64_t dim = rows.values.size(1);
  return BlockedRows{rows.values,  rows.values.data_ptr(),
                     torch::kChar, rows.values.size(0),
                     dim,          dim,
                     /*block=*/1,  /*pair=*/1,
                     rows.scales};
}

void PreparedWeight::add_memory(std::vector<MemoryRange>& ranges) const {
  if (form_ == Form::kOneDnn) packed_.add_memory(ranges);
}

torch::Tensor PreparedWeight::linear_relu(const torch::Tensor& x) const {
  if (form_ == Form::kOneDnn) return packed_.linear(x, bias_, /*relu=*/true);
  if (form_ == Form::kInt8) return int8_.linear(x, /*relu=*/true);
  return linear(x).relu_();  // a fresh product: inference only, so nothing else reads it
}

}  // namespace tfm
