#include "model/int8_weight.h"
#include "runtime/step_team.h"

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

#include "runtime/parallel_for.h"
#include "text/option_names.h"

namespace tfm {
namespace {

/// Output columns per packed panel of W^T, and rows per product call: a call's int32 products
/// (kBlockRows x kPanelColumns, 768 KiB) stay in a core's second-level cache until they are
/// dequantized, and a decoding step of a few rows makes few calls (each costs FBGEMM's setup).
constexpr int32_t kPanelColumns = 2048;
constexpr int64_t kBlockRows = 96;

/// Row `row` of x [m, k] quantized as quantized::linear_dynamic (reduce_range) quantizes a one-row
/// input: its own range mapped onto [0, 127] (7 bits, which AVX2's int8 multiply-add cannot
/// overflow) -> `out` [k] and the row's parameters.
fbgemm::TensorQuantizationParams quantize_row(const float* row, int64_t k, uint8_t* out) {
  float low = 0.0F, high = 0.0F;
  fbgemm::FindMinMax(row, &low, &high, k);
  const auto chosen = quant_utils::ChooseQuantizationParams(low, high, /*qmin=*/0, /*qmax=*/255,
                                                            /*preserve_sparsity=*/false,
                                                            /*force_scale_power_of_two=*/false, /*reduce_range=*/true);
  fbgemm::TensorQuantizationParams params;
  params.scale = static_cast<float>(chosen.scale);
  params.zero_point = chosen.zero_point;
  params.precision = 8;
  fbgemm::QuantizeAvx2<uint8_t>(row, out, k, params);
  return params;
}

/// A panel's output columns as FBGEMM's output step reads them: W's per-row scales, zero points
/// and sums, the bias (or nullptr), and how many.
struct PanelColumns {
  const float* scales;
  const int32_t* zero_points;
  const int32_t* column_sums;
  const float* bias;
  int32_t count;
};

/// One row's int32 products `in` [count] dequantized into `out` with FBGEMM's own output step and
/// the row's quantization, and with `Relu` clamped at 0.
template <bool Relu>
void dequantize_row(float* out, int32_t* in, const fbgemm::TensorQuantizationParams& row, const PanelColumns& columns,
                    int out_stride, bool avx2) {
  fbgemm::DoNothing<float, float> nothing;
  const fbgemm::ReQuantizeForFloat<Relu, fbgemm::QuantizationGranularity::OUT_CHANNEL> dequantize(
      nothing, row.scale, columns.scales, row.zero_point, columns.zero_points, /*row_offsets=*/nullptr,
      columns.column_sums, columns.bias, static_cast<uint32_t>(columns.count));
  const fbgemm::block_type_t one_row{0, 1, 0, columns.count};
  if (avx2) {
    dequantize.template f<fbgemm::inst_set_t::avx2>(out, in, one_row, out_stride, columns.count);
  } else {
    dequantize.template f<fbgemm::inst_set_t::anyarch>(out, in, one_row, out_stride, columns.count);
  }
}

}  // namespace

struct Int8Weight::Packed {
  /// Columns [first, first + count) of W^T as FBGEMM's kernels read them.
  struct Panel {
    int32_t first = 0, count = 0;
    std::unique_ptr<fbgemm::PackBMatrix<int8_t>> matrix;
  };
  int64_t in = 0, out = 0;
  std::vector<Panel> panels;
  std::vector<float> scales;         // [out]: row i of W is scales[i] x int8
  std::vector<int32_t> zero_points;  // [out]: 0 (symmetric)
  std::vector<int32_t> column_sums;  // [out]: sum over k of int8 W[i, k]
  torch::Tensor bias;                // [out] float32, or undefined
  Int8Rows rows;                     // kept on request (Int8Weight's keep_rows), else undefined
};

torch::Tensor quantize_rows_int8(const torch::Tensor& rows, const torch::Tensor& scales) {
  constexpr int64_t kRowsAtOnce = 64;  // a block's float32 temporary stays in the cache
  auto quantized = torch::empty(rows.sizes(), rows.options().dtype(torch::kInt8));  // [out, in]
  const auto inverse = scales.reciprocal();  // [out]: 1 / scale divided in float32, as FBGEMM does
  for (int64_t first = 0; first < rows.size(0); first += kRowsAtOnce) {
    const int64_t count = std::min(kRowsAtOnce, rows.size(0) - first);
    auto block = rows.narrow(0, first, count) * inverse.narrow(0, first, count).unsqueeze(1);  // [count, in]
    quantized.narrow(0, first, count).copy_(block.round_().clamp_(-128, 127));
  }
  return quantized;
}

Int8Rows int8_rows_from(const torch::Tensor& values, const torch::Tensor& scales) {
  TORCH_CHECK(values.dim() == 2 && values.is_cpu() && values.scalar_type() == torch::kInt8 && values.is_contiguous(),
              "int8_rows_from: contiguous [out, in] int8 values on the CPU expected");
  // Summed here: LibTorch's sum to int32 would first widen all of `values` to int32.
  auto sums = torch::empty({values.size(0)}, torch::kInt);  // [out]
  const int64_t in = values.size(1);
  const auto* value = values.data_ptr<int8_t>();
  auto* sum = sums.data_ptr<int32_t>();
  parallel_for(0, values.size(0), std::max<int64_t>(1, 65536 / std::max<int64_t>(in, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end; ++i) {
                   int32_t total = 0;
                   for (int64_t k = 0; k < in; ++k) total += value[i * in + k];
                   sum[i] = total;
                 }
               });
  return {values, scales, sums};
}

Int8Rows quantize_int8_rows(const torch::Tensor& rows) {
  TORCH_CHECK(rows.dim() == 2 && rows.is_cpu() && rows.scalar_type() == torch::kFloat32,
              "quantize_int8_rows: a [out, in] float32 CPU matrix expected");
  torch::NoGradGuard no_grad;
  const auto matrix = rows.detach().contiguous();  // [out, in]
  // max |w| of each row, from its maximum and minimum: no [out, in] temporary of |w|. Two
  // vectorized reductions: LibTorch's aminmax over a dimension runs element by element, a large
  // part of an int8 start (BENCHMARKS.md, "Start-up, second pass").
  const auto lowest = torch::amin(matrix, 1), highest = torch::amax(matrix, 1);  // [out] each
  // LibTorch's per-channel quantization, as quantized::linear_prepack receives it. With these
  // scales no value rounds beyond 127 in magnitude.
  const auto scales = (torch::max(highest, -lowest) / 127.0).clamp_min(1e-12).contiguous();  // [out]
  const auto values = quantize_rows_int8(matrix, scales);                                    // [out, in] int8
  return int8_rows_from(values, scales);
}

namespace {

/// quantize_int8_rows(weight), with the user's error where int8 inference cannot take it.
Int8Rows rows_for_int8_inference(const torch::Tensor& weight) {
  if (!weight.device().is_cpu() || weight.scalar_type() != torch::kFloat32 || weight.dim() != 2) {
    throw std::invalid_argument("int8 inference needs float32 weights on the CPU (" + option_name("quantize") +
                                " int8 with " + option_name("dtype") + " float32 " + option_name("device") + " cpu)");
  }
  return quantize_int8_rows(weight);
}

}  // namespace

Int8Weight::Int8Weight(const torch::Tensor& weight, const torch::Tensor& bias, bool keep_rows)
    : Int8Weight(rows_for_int8_inference(weight), bias, keep_rows) {}

Int8Weight::Int8Weight(const Int8Rows& rows, const torch::Tensor& bias, bool keep_rows) {
  const auto& v = rows.values;
  const bool fits = v.defined() && v.is_cpu() && v.scalar_type() == torch::kInt8 && v.dim() == 2 && v.is_contiguous() &&
                    rows.scales.defined() && rows.scales.is_cpu() && rows.scales.scalar_type() == torch::kFloat32 &&
                    rows.scales.is_contiguous() && rows.scales.dim() == 1 && rows.scales.size(0) == v.size(0) &&
                    rows.sums.defined() && rows.sums.is_cpu() && rows.sums.scalar_type() == torch::kInt32 &&
                    rows.sums.is_contiguous() && rows.sums.dim() == 1 && rows.sums.size(0) == v.size(0);
  if (!fits) throw std::invalid_argument("Int8Weight: int8 rows [out, in] with float32 scales and int32 sums [out]");
  torch::NoGradGuard no_grad;
  auto packed = std::make_shared<Packed>();
  packed->out = v.size(0);
  packed->in = v.size(1);
  const auto* values = v.data_ptr<int8_t>();
  const auto in = static_cast<int32_t>(packed->in), out = static_cast<int32_t>(packed->out);
  for (int32_t first = 0; first < out; first += kPanelColumns) {
    Packed::Panel panel;
    panel.first = first;
    panel.count = std::min(kPanelColumns, out - first);
    panel.matrix = std::make_unique<fbgemm::PackBMatrix<int8_t>>(fbgemm::matrix_op_t::Transpose, in, panel.count,
                                                                 values + static_cast<int64_t>(first) * in, in);
    packed->panels.push_back(std::move(panel));
  }
  const auto* scales = rows.scales.data_ptr<float>();
  packed->scales.assign(scales, scales + out);
  packed->zero_points.assign(out, 0);
  const auto* sums = rows.sums.data_ptr<int32_t>();
  packed->column_sums.assign(sums, sums + out);
  if (bias.defined()) packed->bias = bias.detach().to(torch::kFloat32).contiguous();
  if (keep_rows) packed->rows = rows;
  packed_ = std::move(packed);
}

const Int8Rows& Int8Weight::rows() const {
  static const Int8Rows kNone;
  return packed_ != nullptr ? packed_->rows : kNone;
}

torch::Tensor Int8Weight::linear(const torch::Tensor& x, bool relu) const {
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
  float* result = output.data_ptr<float>();
  // Each row is quantized by its own range, so that a row's product never depends on the rows
  // beside it: a sentence's translation is the same alone, in any batch and with any --workers.
  auto quantized = torch::empty({m, k}, input.options().dtype(torch::kByte));  // [m, k]
  uint8_t* quantized_rows = quantized.data_ptr<uint8_t>();
  std::vector<fbgemm::TensorQuantizationParams> params(static_cast<size_t>(m));
  team_parallel_for(0, m, std::max<int64_t>(1, 16384 / k), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) params[i] = quantize_row(rows + i * k, k, quantized_rows + i * k);
  });
  const float* bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
  const bool avx2 = fbgemm::fbgemmHasAvx2Support();
  // Per block of rows and panel of columns, FBGEMM's threads share the int32 products (it splits
  // a few rows' columns among them), and then each row is dequantized with FBGEMM's own output
  // step and that row's quantization: the bits quantized::linear_dynamic gives the row alone.
  thread_local std::vector<int32_t> buffer;
  buffer.resize(static_cast<size_t>(kBlockRows * kPanelColumns));
  int32_t* products = buffer.data();  // [block rows, panel columns]
  const int threads = at::get_num_threads();
  for (int64_t first = 0; first < m; first += kBlockRows) {
    const auto count = static_cast<int32_t>(std::min(kBlockRows, m - first));
    for (const auto& panel : w.panels) {
      team_parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
        fbgemm::PackAMatrix<uint8_t> packed_rows(fbgemm::matrix_op_t::NoTranspose, count, static_cast<int32_t>(k),
                                                 quantized_rows + first * k, static_cast<int32_t>(k));
        fbgemm::DoNothing<int32_t, int32_t> nothing_more;
        const fbgemm::memCopy<> keep(nothing_more);
        for (int64_t thread = begin; thread < end; ++thread) {
          fbgemm::fbgemmPacked(packed_rows, *panel.matrix, products, products, static_cast<uint32_t>(panel.count), keep,
                               static_cast<int>(thread), threads);
        }
      });
      team_parallel_for(0, count, std::max<int64_t>(1, 8192 / panel.count), [&](int64_t begin, int64_t end) {
        const PanelColumns columns{w.scales.data() + panel.first, w.zero_points.data() + panel.first,
                                   w.column_sums.data() + panel.first, bias != nullptr ? bias + panel.first : nullptr,
                                   panel.count};
        const auto dequantize = relu ? dequantize_row<true> : dequantize_row<false>;
        for (int64_t r = begin; r < end; ++r) {
          dequantize(result + (first + r) * n + panel.first, products + r * panel.count,
                     params[static_cast<size_t>(first + r)], columns, static_cast<int>(n), avx2);
        }
      });
    }
  }
  return output;
}

}  // namespace tfm
