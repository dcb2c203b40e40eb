#include "model/int8_weight.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/native/quantized/cpu/QuantUtils.h>
#include <c10/util/Exception.h>
#include <fbgemm/Fbgemm.h>
#include <torch/torch.h>

#include "text/option_names.h"

namespace tfm {
namespace {

/// fbgemm::FindMinMax over `count` floats, a piece per thread: the same minimum and maximum, without
/// the other threads waiting on one to read a decoding step's whole input.
std::pair<float, float> value_range(const float* values, int64_t count) {
  constexpr int64_t kPieceElements = int64_t{1} << 16;
  const int64_t pieces = std::clamp<int64_t>(count / kPieceElements, 1, at::get_num_threads());
  std::vector<float> minima(static_cast<size_t>(pieces)), maxima(static_cast<size_t>(pieces));
  at::parallel_for(0, pieces, 1, [&](int64_t begin, int64_t end) {
    for (int64_t piece = begin; piece < end; ++piece) {
      const int64_t from = count * piece / pieces, to = count * (piece + 1) / pieces;
      fbgemm::FindMinMax(values + from, &minima[static_cast<size_t>(piece)], &maxima[static_cast<size_t>(piece)],
                         to - from);
    }
  });
  return {*std::min_element(minima.begin(), minima.end()), *std::max_element(maxima.begin(), maxima.end())};
}

/// Swallows LibTorch's warnings: quantize_per_channel warns that quantized tensors are deprecated.
class SilentWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

}  // namespace

struct Int8Weight::Packed {
  int64_t in = 0, out = 0;
  std::unique_ptr<fbgemm::PackBMatrix<int8_t>> matrix;  // W^T as FBGEMM's kernels read it
  std::vector<float> scales;                            // [out]: row i of W is scales[i] x int8
  std::vector<int32_t> zero_points;                     // [out]: 0 (symmetric)
  std::vector<int32_t> column_sums;                     // [out]: sum over k of int8 W[i, k]
  torch::Tensor bias;                                   // [out] float32, or undefined
};

Int8Weight::Int8Weight(const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!weight.device().is_cpu() || weight.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument("int8 inference needs float32 weights on the CPU (" + option_name("quantize") +
                                " int8 with " + option_name("dtype") + " float32 " + option_name("device") + " cpu)");
  }
  torch::NoGradGuard no_grad;
  SilentWarnings silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
  auto packed = std::make_shared<Packed>();
  const auto rows = weight.detach().contiguous();  // [out, in]
  packed->out = rows.size(0);
  packed->in = rows.size(1);
  const auto scales = (rows.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kDouble);  // [out]
  // LibTorch's per-channel quantization (round half to even, clamped to int8), as
  // quantized::linear_prepack receives it.
  const auto quantized = torch::quantize_per_channel(rows, scales, torch::zeros({packed->out}, torch::kLong), 0,
                                                     torch::kQInt8)
                             .int_repr()
                             .contiguous();  // [out, in] int8
  const auto* values = quantized.data_ptr<int8_t>();
  const auto in = static_cast<int32_t>(packed->in), out = static_cast<int32_t>(packed->out);
  packed->matrix = std::make_unique<fbgemm::PackBMatrix<int8_t>>(fbgemm::matrix_op_t::Transpose, in, out, values, in);
  const auto float_scales = scales.to(torch::kFloat32);
  packed->scales.assign(float_scales.data_ptr<float>(), float_scales.data_ptr<float>() + out);
  packed->zero_points.assign(out, 0);
  packed->column_sums.resize(out);
  for (int32_t i = 0; i < out; ++i) {
    int32_t sum = 0;
    for (int32_t k = 0; k < in; ++k) sum += values[static_cast<int64_t>(i) * in + k];
    packed->column_sums[i] = sum;
  }
  if (bias.defined()) packed->bias = bias.detach().to(torch::kFloat32).contiguous();
  packed_ = std::move(packed);
}

torch::Tensor Int8Weight::linear(const torch::Tensor& x) const {
  TORCH_CHECK(defined(), "Int8Weight::linear: no weight");
  const Packed& w = *packed_;
  const auto input = x.contiguous();
  TORCH_CHECK(input.scalar_type() == torch::kFloat32 && input.dim() >= 1 && input.size(-1) == w.in,
              "Int8Weight::linear: float32 input of ", w.in, " features expected");
  const int64_t n = w.out, k = w.in, m = k == 0 ? 0 : input.numel() / k;
  auto sizes = input.sizes().vec();
  sizes.back() = n;
  auto output = torch::empty(sizes, input.options());  // [..., out]
  if (m == 0) return output;
  const float* rows = input.data_ptr<float>();
  // One quantization of the whole input, as quantized::linear_dynamic with reduce_range: [0, 127].
  const auto [x_min, x_max] = value_range(rows, input.numel());
  auto q = quant_utils::ChooseQuantizationParams(x_min, x_max, /*qmin=*/0, /*qmax=*/255,
                                                 /*preserve_sparsity=*/false, /*force_scale_power_of_two=*/false,
                                                 /*reduce_range=*/true);
  q.precision = 8;
  const float* bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
  // FBGEMM accumulates in an int32 matrix beside the float32 output. quantized::linear_dynamic
  // allocates it at the output's full size ([rows, vocabulary] at the output layer, the largest
  // transient of an int8 decoding step); here it holds a block of rows, reused down the product.
  constexpr int64_t kBufferElements = int64_t{1} << 21;  // 8 MiB of int32
  const int64_t block = std::min(m, std::max<int64_t>(1, kBufferElements / n));
  auto buffer = torch::empty({block, n}, input.options().dtype(torch::kInt));  // [block, out]
  const int threads = at::get_num_threads();
  for (int64_t first = 0; first < m; first += block) {
    const auto count = static_cast<int32_t>(std::min(block, m - first));
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
      fbgemm::PackAWithQuantRowOffset<uint8_t> packed_rows(
          fbgemm::matrix_op_t::NoTranspose, count, static_cast<int32_t>(k), rows + first * k, static_cast<int32_t>(k),
          /*pmat=*/nullptr, q.scale, q.zero_point);
      fbgemm::DoNothing<float, float> nothing;
      const fbgemm::ReQuantizeForFloat<false, fbgemm::QuantizationGranularity::OUT_CHANNEL> dequantize(
          nothing, q.scale, w.scales.data(), q.zero_point, w.zero_points.data(), packed_rows.getRowOffsetBuffer(),
          w.column_sums.data(), bias, static_cast<uint32_t>(n));
      for (int64_t task = begin; task < end; ++task) {
        fbgemm::fbgemmPacked(packed_rows, *w.matrix, output.data_ptr<float>() + first * n, buffer.data_ptr<int32_t>(),
                             static_cast<int32_t>(n), dequantize, static_cast<int>(task), threads);
      }
    });
  }
  return output;
}

}  // namespace tfm
