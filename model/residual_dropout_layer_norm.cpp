#include "model/residual_dropout_layer_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/dropout.h"
#include "model/layer_norm_rows.h"
#include "model/residual_dropout.h"
#include "runtime/float_lanes.h"
#include "runtime/kernels.h"
#include "runtime/parallel_for.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

using BFloat16 = c10::BFloat16;

/// What a pass reads and writes; rows of `width` floats (a multiple of kVectorLanes).
struct Rows {
  int64_t width = 0;
  float eps = 0;
  const float* x = nullptr;            // [rows, width]: the residual stream (forward)
  const BFloat16* sublayer = nullptr;  // [rows, width] (forward)
  const BFloat16* noise = nullptr;     // [rows, width]: dropout's factors
  const float* weight = nullptr;       // [width]
  const float* bias = nullptr;         // [width] (forward)
  float* sum = nullptr;                // [rows, width]: x + dropout(sublayer), kept for the backward
  float* mean = nullptr;               // [rows]
  float* rstd = nullptr;               // [rows]: 1 / sqrt(variance + eps)
  float* out = nullptr;                // [rows, width]: the forward's output
  const float* grad = nullptr;         // [rows, width]: the output's gradient (backward)
  float* grad_x = nullptr;             // [rows, width]
  BFloat16* grad_sublayer = nullptr;   // [rows, width]
  float* grad_weight = nullptr;        // [width]: this part's sum over its rows
  float* grad_bias = nullptr;          // [width]
};

/// Rows [begin, end): sum = x + bf16(sublayer * noise) (residual_dropout's bits), then LayerNorm.
template <typename Lanes>
TFM_ALWAYS_INLINE void forward_range(const Rows& a, int64_t begin, int64_t end) {
  const int64_t d = a.width;
  for (int64_t r = begin; r < end; ++r) {
    float* sum = a.sum + r * d;
    Lanes total{};
    for (int64_t i = 0; i < d; i += kVectorLanes) {
      const Lanes dropped = load_lanes<Lanes>(a.sublayer + r * d + i) * load_lanes<Lanes>(a.noise + r * d + i);
      const Lanes s = load_lanes<Lanes>(a.x + r * d + i) + rounded_to_bfloat16(dropped);
      store_lanes(sum + i, s);
      total += s;
    }
    const float mean = sum_of_lanes(total) / static_cast<float>(d);
    Lanes squares{};
    for (int64_t i = 0; i < d; i += kVectorLanes) {
      const Lanes centered = load_lanes<Lanes>(sum + i) - mean;
      squares += centered * centered;
    }
    const float rstd = 1.0F / std::sqrt(sum_of_lanes(squares) / static_cast<float>(d) + a.eps);
    for (int64_t i = 0; i < d; i += kVectorLanes) {
      const Lanes normalized = (load_lanes<Lanes>(sum + i) - mean) * rstd;
      store_lanes(a.out + r * d + i, normalized * load_lanes<Lanes>(a.weight + i) + load_lanes<Lanes>(a.bias + i));
    }
    a.mean[r] = mean;
    a.rstd[r] = rstd;
  }
}

/// Rows [begin, end): LayerNorm's backward to the sum's gradient, which is x's; the sub-layer's
/// is bf16(bf16(that) * noise) as residual_dropout's backward gives it. The weight's and the
/// bias's gradients over these rows go to grad_weight and grad_bias.
template <typename Lanes>
TFM_ALWAYS_INLINE void backward_range(const Rows& a, int64_t begin, int64_t end) {
  const int64_t d = a.width;
  for (int64_t r = begin; r < end; ++r) {
    const float mean = a.mean[r], rstd = a.rstd[r];
    const float* sum = a.sum + r * d;
    const float* grad = a.grad + r * d;
    Lanes scaled_total{}, along_total{};  // of g = grad * weight, and of g * normalized
    for (int64_t i = 0; i < d; i += kVectorLanes) {
      const Lanes g = load_lanes<Lanes>(grad + i) * load_lanes<Lanes>(a.weight + i);
      scaled_total += g;
      along_total += g * ((load_lanes<Lanes>(sum + i) - mean) * rstd);
    }
    const float g_mean = sum_of_lanes(scaled_total) / static_cast<float>(d);
    const float along_mean = sum_of_lanes(along_total) / static_cast<float>(d);
    for (int64_t i = 0; i < d; i += kVectorLanes) {
      const Lanes normalized = (load_lanes<Lanes>(sum + i) - mean) * rstd;
      const Lanes upstream = load_lanes<Lanes>(grad + i);
      const Lanes g = upstream * load_lanes<Lanes>(a.weight + i);
      const Lanes ds = (g - g_mean - normalized * along_mean) * rstd;
      store_lanes(a.grad_x + r * d + i, ds);
      store_lanes(a.grad_sublayer + r * d + i, rounded_to_bfloat16(ds) * load_lanes<Lanes>(a.noise + r * d + i));
      store_lanes(a.grad_weight + i, load_lanes<Lanes>(a.grad_weight + i) + upstream * normalized);
      store_lanes(a.grad_bias + i, load_lanes<Lanes>(a.grad_bias + i) + upstream);
    }
  }
}

TFM_LANE_KERNEL((void residual_norm_forward(const Rows& a, int64_t begin, int64_t end)),
                forward_range<Lanes>(a, begin, end);)
TFM_LANE_KERNEL((void residual_norm_backward(const Rows& a, int64_t begin, int64_t end)),
                backward_range<Lanes>(a, begin, end);)

/// Rows per part of a pass. The weight's and the bias's gradients are summed per part and then
/// over the parts in order, so their bits do not depend on the thread count.
constexpr int64_t kPartRows = 64;

int64_t part_count(int64_t rows) { return (rows + kPartRows - 1) / kPartRows; }

/// Parts per task: LibTorch's element-wise grain.
int64_t part_grain(int64_t width) {
  return std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(kPartRows * width, 1));
}

class ResidualDropoutLayerNorm : public torch::autograd::Function<ResidualDropoutLayerNorm> {
 public:
  /// x: float32 [rows, D]; sublayer, noise: bfloat16 [rows, D]; weight, bias: float32 [D]; all
  /// contiguous -> norm(x + sublayer * noise) [rows, D] float32
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& sublayer, const torch::Tensor& noise, const torch::Tensor& weight,
                               const torch::Tensor& bias, double eps) {
    const int64_t rows = x.size(0), d = x.size(1);
    auto sum = torch::empty_like(x);
    auto out = torch::empty_like(x);
    auto mean = torch::empty({rows}, x.options());
    auto rstd = torch::empty({rows}, x.options());
    Rows a;
    a.width = d;
    a.eps = static_cast<float>(eps);
    a.x = x.data_ptr<float>();
    a.sublayer = sublayer.data_ptr<BFloat16>();
    a.noise = noise.data_ptr<BFloat16>();
    a.weight = weight.data_ptr<float>();
    a.bias = bias.data_ptr<float>();
    a.sum = sum.data_ptr<float>();
    a.mean = mean.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>();
    a.out = out.data_ptr<float>();
    parallel_for(0, part_count(rows), part_grain(d), [&](int64_t begin, int64_t end) {
      residual_norm_forward(a, begin * kPartRows, std::min(end * kPartRows, rows));
    });
    ctx->save_for_backward({sum, mean, rstd, noise, weight});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& sum = saved[0];
    const auto grad = grad_outputs[0].to(torch::kFloat32).contiguous();  // [rows, D]
    const int64_t rows = sum.size(0), d = sum.size(1), parts = part_count(rows);
    auto grad_x = torch::empty_like(sum);
    auto grad_sublayer = torch::empty_like(saved[3]);
    auto part_sums = torch::zeros({parts, 2, d}, sum.options());  // per part: weight's, bias's
    Rows a;
    a.width = d;
    a.noise = saved[3].data_ptr<BFloat16>();
    a.weight = saved[4].data_ptr<float>();
    a.sum = sum.data_ptr<float>();
    a.mean = saved[1].data_ptr<float>();
    a.rstd = saved[2].data_ptr<float>();
    a.grad = grad.data_ptr<float>();
    a.grad_x = grad_x.data_ptr<float>();
    a.grad_sublayer = grad_sublayer.data_ptr<BFloat16>();
    float* sums = part_sums.data_ptr<float>();
    parallel_for(0, parts, part_grain(d), [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        Rows mine = a;
        mine.grad_weight = sums + part * 2 * d;
        mine.grad_bias = mine.grad_weight + d;
        residual_norm_backward(mine, part * kPartRows, std::min((part + 1) * kPartRows, rows));
      }
    });
    const auto totals = part_sums.sum(0);  // [2, D], parts in order
    return {grad_x, grad_sublayer, torch::Tensor(), totals[0], totals[1], torch::Tensor()};
  }
};

bool fusable(const torch::nn::LayerNorm& norm, const torch::Tensor& x, const torch::Tensor& sublayer, double p,
             bool training) {
  const auto& options = norm->options;
  const auto& weight = norm->weight;
  const auto& bias = norm->bias;
  return fused_kernels() && training && p > 0.0 && p < 1.0 && x.is_cpu() && sublayer.is_cpu() &&
         x.scalar_type() == torch::kFloat32 && sublayer.scalar_type() == torch::kBFloat16 &&
         x.sizes() == sublayer.sizes() && x.dim() >= 1 && x.size(-1) % kVectorLanes == 0 && x.numel() > 0 &&
         options.normalized_shape() == std::vector<int64_t>{x.size(-1)} && weight.defined() && bias.defined() &&
         weight.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32 && weight.is_cpu();
}

}  // namespace

torch::Tensor residual_dropout_layer_norm(torch::nn::LayerNorm& norm, const torch::Tensor& x,
                                          const torch::Tensor& sublayer, double p, bool training) {
  if (!fusable(norm, x, sublayer, p, training)) {
    return layer_norm_rows(norm, residual_dropout(x, sublayer, p, training));
  }
  const int64_t d = x.size(-1);
  const auto sub = sublayer.contiguous();
  const auto noise = dropout_noise(sub, p);  // residual_dropout's draw: the same random stream
  const auto out = ResidualDropoutLayerNorm::apply(x.contiguous().view({-1, d}), sub.view({-1, d}), noise.view({-1, d}),
                                                   norm->weight, norm->bias, norm->options.eps());
  return out.view(x.sizes());
}

}  // namespace tfm
