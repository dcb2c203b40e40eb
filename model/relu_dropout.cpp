#include "model/relu_dropout.h"

#include <algorithm>
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

/// out[i] = x[i] * noise[i] where x[i] > 0, else 0; i in [begin, end). The product of two floats
/// widened from T rounds to T once, as LibTorch's multiply does.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void forward_range(const T* x, const T* noise, T* out, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + kVectorLanes <= end; i += kVectorLanes) {
    const Lanes v = load_lanes<Lanes>(x + i);
    store_lanes(out + i, where(v > 0.0F, v * load_lanes<Lanes>(noise + i), Lanes{}));
  }
  for (; i < end; ++i) {
    const float v = static_cast<float>(x[i]);
    out[i] = static_cast<T>(v > 0.0F ? v * static_cast<float>(noise[i]) : 0.0F);
  }
}

/// grad_x[i] = grad[i] * scale where out[i] > 0 (x[i] > 0 and kept), else 0; i in [begin, end).
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void backward_range(const T* grad, const T* out, float scale, T* grad_x, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + kVectorLanes <= end; i += kVectorLanes) {
    store_lanes(grad_x + i, where(load_lanes<Lanes>(out + i) > 0.0F, load_lanes<Lanes>(grad + i) * scale, Lanes{}));
  }
  for (; i < end; ++i) {
    grad_x[i] = static_cast<T>(static_cast<float>(out[i]) > 0.0F ? static_cast<float>(grad[i]) * scale : 0.0F);
  }
}

TFM_LANE_KERNEL((void relu_dropout_range(const float* x, const float* noise, float* out, int64_t begin, int64_t end)),
                forward_range<Lanes>(x, noise, out, begin, end);)
TFM_LANE_KERNEL((void relu_dropout_range(const c10::BFloat16* x, const c10::BFloat16* noise, c10::BFloat16* out,
                                         int64_t begin, int64_t end)),
                forward_range<Lanes>(x, noise, out, begin, end);)
TFM_LANE_KERNEL((void relu_dropout_gradient_range(const float* grad, const float* out, float scale, float* grad_x,
                                                  int64_t begin, int64_t end)),
                backward_range<Lanes>(grad, out, scale, grad_x, begin, end);)
TFM_LANE_KERNEL((void relu_dropout_gradient_range(const c10::BFloat16* grad, const c10::BFloat16* out, float scale,
                                                  c10::BFloat16* grad_x, int64_t begin, int64_t end)),
                backward_range<Lanes>(grad, out, scale, grad_x, begin, end);)

/// Elements per task: LibTorch's element-wise kernels' grain.
constexpr int64_t kGrain = at::internal::GRAIN_SIZE;

template <typename T>
void forward_all(const torch::Tensor& x, const torch::Tensor& noise, torch::Tensor& out) {
  const T* xs = x.data_ptr<T>();
  const T* ns = noise.data_ptr<T>();
  T* os = out.data_ptr<T>();
  parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) { relu_dropout_range(xs, ns, os, begin, end); });
}

template <typename T>
void backward_all(const torch::Tensor& grad, const torch::Tensor& out, float scale, torch::Tensor& grad_x) {
  const T* gs = grad.data_ptr<T>();
  const T* os = out.data_ptr<T>();
  T* xs = grad_x.data_ptr<T>();
  parallel_for(0, grad.numel(), kGrain,
               [&](int64_t begin, int64_t end) { relu_dropout_gradient_range(gs, os, scale, xs, begin, end); });
}

class ReluDropout : public torch::autograd::Function<ReluDropout> {
 public:
  /// x: contiguous, float32 or bfloat16; noise: dropout_noise(x, p) -> relu(x) * noise
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& noise, double p) {
    auto out = torch::empty_like(x);
    if (x.scalar_type() == torch::kFloat32) {
      forward_all<float>(x, noise, out);
    } else {
      forward_all<c10::BFloat16>(x, noise, out);
    }
    ctx->save_for_backward({out});
    // The kept elements' factor, as dropout_noise() holds it in x's dtype.
    ctx->saved_data["scale"] = noise.new_full({}, 1.0 / (1.0 - p)).item<double>();
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto out = ctx->get_saved_variables()[0];
    const auto grad = grad_outputs[0].to(out.scalar_type()).contiguous();
    auto grad_x = torch::empty_like(out);
    const auto scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    if (out.scalar_type() == torch::kFloat32) {
      backward_all<float>(grad, out, scale, grad_x);
    } else {
      backward_all<c10::BFloat16>(grad, out, scale, grad_x);
    }
    return {grad_x, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor relu_dropout(const torch::Tensor& x, double p, bool training) {
  const bool fused = fused_kernels() && training && p > 0.0 && p < 1.0 && x.is_cpu() &&
                     (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16);
  if (!fused) return apply_dropout(torch::relu(x), p, training);
  const auto rows = x.contiguous();
  return ReluDropout::apply(rows, dropout_noise(rows, p), p);
}

}  // namespace tfm
