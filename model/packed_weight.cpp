#include "model/packed_weight.h"

#include <atomic>
#include <optional>
#include <string>

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/torch.h>

#include "model/small_rows_product.h"
#include "model/tensor_bytes.h"
#include "runtime/capabilities.h"

namespace tfm {
namespace {

c10::OperatorHandle op(const char* name) { return c10::Dispatcher::singleton().findSchemaOrThrow(name, ""); }

std::atomic<bool> pad_rows{false};

}  // namespace

void PackedWeight::set_row_padding(bool pad) { pad_rows = pad; }

int64_t PackedWeight::padded_rows(int64_t rows) {
  if (rows <= 4) return rows;
  int64_t step = 4;
  if (rows > 16) {
    int64_t octave = 16;  // the largest power of two below rows
    while (octave * 2 < rows) octave *= 2;
    step = octave / 4;
  }
  return (rows + step - 1) / step * step;
}

bool PackedWeight::supported(const torch::Tensor& weight) {
  return at::hasMKLDNN() && weight.defined() && weight.device().is_cpu() && weight.dim() == 2 &&
         (weight.scalar_type() == torch::kFloat32 ||
          (weight.scalar_type() == torch::kBFloat16 && cpu_has_onednn_bf16()));
}

PackedWeight::PackedWeight(const torch::Tensor& weight) : out_features_(weight.size(0)) {
  TORCH_CHECK(supported(weight), "PackedWeight: a 2-d float32 or bfloat16 CPU weight is needed");
  static const c10::OperatorHandle reorder = op("mkldnn::_reorder_linear_weight");
  torch::jit::Stack stack{weight.detach().contiguous(), std::optional<int64_t>()};
  reorder.callBoxed(&stack);
  packed_ = stack[0].toTensor();
  if (SmallRowsProduct::supported(weight)) small_rows_ = std::make_shared<const SmallRowsProduct>(weight, packed_);
}

void PackedWeight::add_memory(std::vector<MemoryRange>& ranges) const {
  const TensorBytes bytes = tensor_bytes(packed_);
  ranges.push_back({bytes.data, bytes.size});
  if (small_rows_ && !small_rows_->reads(packed_)) small_rows_->add_memory(ranges);
}

torch::Tensor PackedWeight::linear(const torch::Tensor& x, const torch::Tensor& bias, bool relu) const {
  static const c10::OperatorHandle linear_pointwise = op("mkldnn::_linear_pointwise");
  const auto dtype = packed_.scalar_type();
  const int64_t in = x.size(-1);
  if (small_rows_ && x.numel() <= SmallRowsProduct::kMaxRows * in && x.numel() >= in && x.scalar_type() == dtype &&
      (!bias.defined() || bias.scalar_type() == dtype)) {
    return small_rows_->linear(x.contiguous(), bias, relu);  // [..., out]
  }
  auto rows = x.reshape({-1, in}).contiguous();  // [M, in]
  const int64_t m = rows.size(0);
  auto sizes = x.sizes().vec();
  sizes.back() = out_features_;
  // On AMX tiles oneDNN compiles a new shape for ~5-10 ms, the time of several products: there
  // every batch pads, and the cache holds what the few padded counts need (onednn_cache.h).
  const bool pad = pad_rows || (dtype == torch::kBFloat16 && cpu_has_bf16_tiles());
  const int64_t padded = pad ? padded_rows(m) : m;
  if (padded != m) {
    // Each output row reads only its own input row, so the zero rows change nothing but the shape.
    auto grown = torch::empty({padded, rows.size(1)}, rows.options());  // [M', in]
    grown.narrow(0, 0, m).copy_(rows);
    grown.narrow(0, m, padded - m).zero_();
    rows = grown;
  }
  std::optional<torch::Tensor> maybe_bias;
  if (bias.defined()) maybe_bias = bias;
  torch::jit::Stack stack{rows,
                          packed_,
                          maybe_bias,
                          std::string(relu ? "relu" : "none"),
                          c10::List<std::optional<c10::Scalar>>(),
                          std::optional<std::string>("")};
  linear_pointwise.callBoxed(&stack);
  return stack[0].toTensor().narrow(0, 0, m).view(sizes);  // [M', out] -> [..., out]
}

std::optional<BlockedRows> PackedWeight::blocked_rows() const {
  if (!small_rows_) return std::nullopt;
  return small_rows_->blocked_rows();
}

}  // namespace tfm
