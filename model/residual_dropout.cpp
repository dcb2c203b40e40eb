#include "model/residual_dropout.h"

#include <cstdint>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/dropout.h"
#include "runtime/float_lanes.h"
#include "runtime/kernels.h"
#include "runtime/parallel_for.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

using BFloat16 = c10::BFloat16;

/// out[i] = x[i] + bf16(sub[i] * noise[i]); i in [begin, end).
template <typename Lanes>
TFM_ALWAYS_INLINE void forward_range(const float* x, const BFloat16* sub, const BFloat16* noise, float* out,
                                     int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + kVectorLanes <= end; i += kVectorLanes) {
    store_lanes(out + i, load_lanes<Lanes>(x + i) +
                             rounded_to_bfloat16(load_lanes<Lanes>(sub + i) * load_lanes<Lanes>(noise + i)));
  }
  for (; i < end; ++i) {
    out[i] = x[i] + static_cast<float>(BFloat16(static_cast<float>(sub[i]) * static_cast<float>(noise[i])));
  }
}

/// grad_sub[i] = bf16(bf16(grad[i]) * noise[i]); i in [begin, end).
template <typename Lanes>
TFM_ALWAYS_INLINE void backward_range(const float* grad, const BFloat16* noise, BFloat16* grad_sub, int64_t begin,
                                      int64_t end) {
  int64_t i = begin;
  for (; i + kVectorLanes <= end; i += kVectorLanes) {
    store_lanes(grad_sub + i, rounded_to_bfloat16(load_lanes<Lanes>(grad + i)) * load_lanes<Lanes>(noise + i));
  }
  for (; i < end; ++i) {
    grad_sub[i] = BFloat16(static_cast<float>(BFloat16(grad[i])) * static_cast<float>(noise[i]));
  }
}

TFM_LANE_KERNEL((void residual_dropout_range(const float* x, const BFloat16* sub, const BFloat16* noise, float* out,
                                             int64_t begin, int64_t end)),
                forward_range<Lanes>(x, sub, noise, out, begin, end);)
TFM_LANE_KERNEL((void residual_dropout_gradient_range(const float* grad, const BFloat16* noise, BFloat16* grad_sub,
                                                      int64_t begin, int64_t end)),
                backward_range<Lanes>(grad, noise, grad_sub, begin, end);)

/// Elements per task: LibTorch's element-wise kernels' grain.
constexpr int64_t kGrain = at::internal::GRAIN_SIZE;

class ResidualDropout : public torch::autograd::Function<ResidualDropout> {
 public:
  /// x: float32, sub, noise: bfloat16, all contiguous and of one shape -> x + sub * noise, float32
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& sub,
                               const torch::Tensor& noise) {
    auto out = torch::empty_like(x);
    const float* xs = x.data_ptr<float>();
    const BFloat16* ss = sub.data_ptr<BFloat16>();
    const BFloat16* ns = noise.data_ptr<BFloat16>();
    float* os = out.data_ptr<float>();
    parallel_for(0, x.numel(), kGrain,
                 [&](int64_t begin, int64_t end) { residual_dropout_range(xs, ss, ns, os, begin, end); });
    ctx->save_for_backward({noise});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto noise = ctx->get_saved_variables()[0];
    const auto grad = grad_outputs[0].to(torch::kFloat32).contiguous();
    auto grad_sub = torch::empty_like(noise);
    const float* gs = grad.data_ptr<float>();
    const BFloat16* ns = noise.data_ptr<BFloat16>();
    BFloat16* out = grad_sub.data_ptr<BFloat16>();
    parallel_for(0, grad.numel(), kGrain,
                 [&](int64_t begin, int64_t end) { residual_dropout_gradient_range(gs, ns, out, begin, end); });
    return {grad_outputs[0], grad_sub, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor residual_dropout(const torch::Tensor& x, const torch::Tensor& sublayer, double p, bool training) {
  const bool fused = fused_kernels() && training && p > 0.0 && p < 1.0 && x.is_cpu() && sublayer.is_cpu() &&
                     x.scalar_type() == torch::kFloat32 && sublayer.scalar_type() == torch::kBFloat16 &&
                     x.sizes() == sublayer.sizes();
  if (!fused) return x + apply_dropout(sublayer, p, training);
  const auto sub = sublayer.contiguous();
  return ResidualDropout::apply(x.contiguous(), sub, dropout_noise(sub, p));
}

}  // namespace tfm
