// LibTorch's dispatch stubs name one kernel per instruction set its x86-64 builds compile; the stub
// is only callable with the same list declared, which LibTorch's headers leave to its own build.
#if defined(__x86_64__)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#endif

#include "model/layer_norm_kernel.h"

#include <torch/torch.h>

#if defined(__x86_64__)
#include <ATen/native/layer_norm.h>
#endif

namespace tfm {

bool layer_norm_kernel_available() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

void layer_norm_kernel(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                       torch::Tensor& out) {
  TORCH_CHECK(layer_norm_kernel_available(), "layer_norm_kernel: not in this build");
  TORCH_CHECK(x.is_cpu() && x.dim() >= 1 && x.is_contiguous() && out.is_contiguous() && out.sizes() == x.sizes() &&
                  out.scalar_type() == x.scalar_type() && weight.scalar_type() == x.scalar_type() &&
                  bias.scalar_type() == x.scalar_type() && weight.is_contiguous() && bias.is_contiguous() &&
                  weight.numel() == x.size(-1) && bias.numel() == x.size(-1) && x.size(-1) > 0,
              "layer_norm_kernel: contiguous [..., N] rows, [N] weight and bias, all of one dtype");
  const int64_t width = x.size(-1);
#if defined(__x86_64__)
  // No mean and 1/sigma: the kernel keeps them only for a backward pass, and skips them when not given.
  at::native::LayerNormKernel(at::kCPU, x, weight, bias, x.numel() / width, width, eps, &out, nullptr, nullptr);
#endif
}

}  // namespace tfm
