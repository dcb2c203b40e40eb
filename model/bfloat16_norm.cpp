#include "model/bfloat16_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "runtime/float_lanes.h"
#include "runtime/parallel_for.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

using BFloat16 = c10::BFloat16;

/// Where bfloat16_layer_norm() reads and writes: rows [rows, width].
struct NormViews {
  const BFloat16* x;
  const BFloat16* added;  // nullptr: x alone
  const BFloat16* weight;
  const BFloat16* bias;
  BFloat16* out;
  int64_t width;
  float eps;
};

/// v[d .. d + 16) of one row: x, or x + added in float.
template <typename Lanes>
TFM_ALWAYS_INLINE Lanes row_values(const BFloat16* x, const BFloat16* added, int64_t d) {
  const Lanes values = load_lanes<Lanes>(x + d);
  return added != nullptr ? values + load_lanes<Lanes>(added + d) : values;
}

/// Rows r .. r + Rows - 1, their passes interleaved: each row's sums are one chain of additions
/// (its lanes in order, as the result's bits require), so a row alone waits on every addition;
/// several rows' chains run side by side. Each row computes exactly what it would alone.
template <typename Lanes, int64_t Rows>
TFM_ALWAYS_INLINE void normalize_row_group(const NormViews& a, int64_t r) {
  const int64_t width = a.width;
  const BFloat16* x[Rows];
  const BFloat16* added[Rows];
  for (int64_t j = 0; j < Rows; ++j) {
    x[j] = a.x + (r + j) * width;
    added[j] = a.added != nullptr ? a.added + (r + j) * width : nullptr;
  }
  Lanes total[Rows] = {};
  for (int64_t d = 0; d < width; d += kVectorLanes) {
    for (int64_t j = 0; j < Rows; ++j) total[j] += row_values<Lanes>(x[j], added[j], d);
  }
  float mean[Rows];
  for (int64_t j = 0; j < Rows; ++j) mean[j] = sum_of_lanes(total[j]) / static_cast<float>(width);
  Lanes squares[Rows] = {};
  for (int64_t d = 0; d < width; d += kVectorLanes) {
    for (int64_t j = 0; j < Rows; ++j) {
      const Lanes centered = row_values<Lanes>(x[j], added[j], d) - mean[j];
      squares[j] += centered * centered;
    }
  }
  float inverse_deviation[Rows];
  for (int64_t j = 0; j < Rows; ++j) {
    const float variance = sum_of_lanes(squares[j]) / static_cast<float>(width);
    inverse_deviation[j] = 1.0F / std::sqrt(variance + a.eps);
  }
  // Every value of a row is read before it is written: out may be x or added.
  for (int64_t d = 0; d < width; d += kVectorLanes) {
    const Lanes weight = load_lanes<Lanes>(a.weight + d), bias = load_lanes<Lanes>(a.bias + d);
    for (int64_t j = 0; j < Rows; ++j) {
      const Lanes normalized = (row_values<Lanes>(x[j], added[j], d) - mean[j]) * inverse_deviation[j];
      store_lanes(a.out + (r + j) * width + d, normalized * weight + bias);
    }
  }
}

/// Rows that normalize side by side (normalize_row_group).
constexpr int64_t kRowsTogether = 4;

template <typename Lanes>
TFM_ALWAYS_INLINE void normalize_rows(const NormViews& a, int64_t begin, int64_t end) {
  int64_t r = begin;
  for (; r + kRowsTogether <= end; r += kRowsTogether) normalize_row_group<Lanes, kRowsTogether>(a, r);
  for (; r < end; ++r) normalize_row_group<Lanes, 1>(a, r);
}

TFM_LANE_KERNEL((void normalize_range(const NormViews& a, int64_t begin, int64_t end)),
                normalize_rows<Lanes>(a, begin, end);)

TFM_LANE_KERNEL((void add_range(const BFloat16* x, BFloat16* sums, int64_t begin, int64_t end)),
                for (int64_t i = begin; i < end; i += kVectorLanes) {
                  store_lanes(sums + i, load_lanes<Lanes>(x + i) + load_lanes<Lanes>(sums + i));
                })

/// Elements per parallel task: enough that a thread's share outweighs waking it.
constexpr int64_t kGrainElements = 32768;

}  // namespace

bool bfloat16_layer_norm_fits(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto bf16 = torch::kBFloat16;
  return x.is_cpu() && x.scalar_type() == bf16 && x.dim() >= 1 && x.is_contiguous() && x.size(-1) > 0 &&
         x.size(-1) % kVectorLanes == 0 && weight.scalar_type() == bf16 && bias.scalar_type() == bf16 &&
         weight.is_cpu() && bias.is_cpu() && weight.is_contiguous() && bias.is_contiguous() &&
         weight.numel() == x.size(-1) && bias.numel() == x.size(-1);
}

void bfloat16_layer_norm(const torch::Tensor& x, const torch::Tensor& added, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps, torch::Tensor& out) {
  TORCH_CHECK(bfloat16_layer_norm_fits(x, weight, bias), "bfloat16_layer_norm: bfloat16 rows of a multiple of ",
              kVectorLanes, " features and a matching weight and bias");
  TORCH_CHECK(!added.defined() || (added.sizes() == x.sizes() && added.scalar_type() == x.scalar_type() &&
                                   added.is_cpu() && added.is_contiguous()),
              "bfloat16_layer_norm: added must be x's shape and dtype, contiguous");
  TORCH_CHECK(out.sizes() == x.sizes() && out.scalar_type() == x.scalar_type() && out.is_contiguous(),
              "bfloat16_layer_norm: out must be x's shape and dtype, contiguous");
  const int64_t width = x.size(-1), rows = x.numel() / width;
  const NormViews views{x.data_ptr<BFloat16>(),      added.defined() ? added.data_ptr<BFloat16>() : nullptr,
                        weight.data_ptr<BFloat16>(), bias.data_ptr<BFloat16>(),
                        out.data_ptr<BFloat16>(),    width,
                        static_cast<float>(eps)};
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElements / width),
               [&](int64_t begin, int64_t end) { normalize_range(views, begin, end); });
}

void bfloat16_add_into(const torch::Tensor& x, torch::Tensor& sublayer) {
  TORCH_CHECK(x.is_cpu() && sublayer.is_cpu() && x.scalar_type() == torch::kBFloat16 &&
                  sublayer.scalar_type() == torch::kBFloat16 && x.sizes() == sublayer.sizes() && x.is_contiguous() &&
                  sublayer.is_contiguous() && x.numel() % kVectorLanes == 0,
              "bfloat16_add_into: two contiguous bfloat16 tensors of one shape, a multiple of ", kVectorLanes,
              " elements");
  const BFloat16* from = x.data_ptr<BFloat16>();
  BFloat16* sums = sublayer.data_ptr<BFloat16>();
  const int64_t vectors = x.numel() / kVectorLanes;
  parallel_for(0, vectors, std::max<int64_t>(1, kGrainElements / kVectorLanes),
               [&](int64_t begin, int64_t end) { add_range(from, sums, begin * kVectorLanes, end * kVectorLanes); });
}

}  // namespace tfm
