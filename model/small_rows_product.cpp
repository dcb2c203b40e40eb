#include "model/small_rows_product.h"

#include <algorithm>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "runtime/vector_clones.h"

#if TFM_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace tfm {
namespace {

bool cpu_has_bf16_kernels() {
#if TFM_HAVE_LIBXSMM
  static const bool has = [] {
    libxsmm_init();
    return libxsmm_get_target_archid() >= LIBXSMM_X86_AVX512_CPX;
  }();
  return has;
#else
  return false;  // built without LIBXSMM: oneDNN takes every product
#endif
}

/// acc [rows, kBlock-apart rows] = x [rows, in] times one block of the weight, through `kernel`.
void run_kernel(void* kernel, const c10::BFloat16* weight_block, const c10::BFloat16* x, float* acc) {
#if TFM_HAVE_LIBXSMM
  reinterpret_cast<libxsmm_bsmmfunction>(kernel)(reinterpret_cast<const libxsmm_bfloat16*>(weight_block),
                                                 reinterpret_cast<const libxsmm_bfloat16*>(x), acc);
#else
  (void)kernel, (void)weight_block, (void)x, (void)acc;
  TORCH_CHECK(false, "SmallRowsProduct: this build has no LIBXSMM");
#endif
}

/// out[r, c] = round(relu?(acc[r, c] + bias[c])) for a block of `width` outputs: acc [rows, width]
/// (leading dimension `ld`), out rows `out_stride` apart.
TFM_VECTOR_CLONES void finish_block(const float* acc, int64_t ld, const c10::BFloat16* bias, bool relu, int64_t rows,
                                    int64_t width, c10::BFloat16* out, int64_t out_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = acc + r * ld;
    c10::BFloat16* o = out + r * out_stride;
    for (int64_t c = 0; c < width; ++c) {
      float v = a[c] + (bias != nullptr ? static_cast<float>(bias[c]) : 0.0F);
      if (relu) v = std::max(v, 0.0F);
      o[c] = static_cast<c10::BFloat16>(v);
    }
  }
}

}  // namespace

bool SmallRowsProduct::supported(const torch::Tensor& weight) {
  return weight.defined() && weight.device().is_cpu() && weight.dim() == 2 &&
         weight.scalar_type() == torch::kBFloat16 && weight.size(1) % 2 == 0 && weight.size(0) > 0 &&
         cpu_has_bf16_kernels();
}

SmallRowsProduct::SmallRowsProduct(const torch::Tensor& weight) : out_(weight.size(0)), in_(weight.size(1)) {
  TORCH_CHECK(supported(weight), "SmallRowsProduct: a [out, in] bfloat16 CPU weight with in even is needed");
  torch::NoGradGuard no_grad;
  const auto w = weight.detach().contiguous();  // [out, in]
  weight_ = torch::empty({out_ * in_}, w.options());
  const auto* from = w.data_ptr<c10::BFloat16>();
  auto* to = weight_.data_ptr<c10::BFloat16>();
  for (int64_t first = 0; first < out_; first += kBlock) {
    const int64_t width = std::min(kBlock, out_ - first);
    c10::BFloat16* block = to + first * in_;  // [in/2, width, 2]
    for (int64_t o = 0; o < width; ++o) {
      for (int64_t i = 0; i < in_; ++i) block[(i / 2) * width * 2 + o * 2 + i % 2] = from[(first + o) * in_ + i];
    }
  }
}

SmallRowsProduct::Kernel SmallRowsProduct::kernel(int64_t rows, int64_t width) const {
  auto& slot = width == kBlock ? full_[rows] : last_[rows];
  if (Kernel known = slot.load(std::memory_order_acquire)) return known;
#if TFM_HAVE_LIBXSMM
  // Column-major in LIBXSMM's terms: C [width x rows] = A [width x in] (pairs of inputs side by
  // side) x B [in x rows], where B is x and C's columns are rows of a block's results.
  const libxsmm_blasint m = width, n = rows, k = in_, lda = width, ldb = in_, ldc = kBlock;
  const float alpha = 1.0F, beta = 0.0F;
  const int flags = LIBXSMM_GEMM_FLAG_VNNI_A;
  const int prefetch = LIBXSMM_PREFETCH_NONE;
  const libxsmm_bsmmfunction made = libxsmm_bsmmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
  TORCH_CHECK(made != nullptr, "LIBXSMM made no bfloat16 kernel for ", rows, " x ", in_, " x ", width);
  slot.store(reinterpret_cast<Kernel>(made), std::memory_order_release);
  return reinterpret_cast<Kernel>(made);
#else
  TORCH_CHECK(false, "SmallRowsProduct: this build has no LIBXSMM");
#endif
}

torch::Tensor SmallRowsProduct::linear(const torch::Tensor& x, const torch::Tensor& bias, bool relu) const {
  const int64_t rows = x.size(0);
  TORCH_CHECK(x.dim() == 2 && x.size(1) == in_ && rows >= 1 && rows <= kMaxRows && x.is_contiguous() &&
                  x.scalar_type() == torch::kBFloat16,
              "SmallRowsProduct: x must be [M <= ", kMaxRows, ", ", in_, "] contiguous bfloat16");
  TORCH_CHECK(!bias.defined() || (bias.numel() == out_ && bias.scalar_type() == torch::kBFloat16),
              "SmallRowsProduct: the bias must be [", out_, "] bfloat16");
  const auto bias_contiguous = bias.defined() ? bias.contiguous() : bias;
  auto out = torch::empty({rows, out_}, x.options());  // [M, out]
  const c10::BFloat16* input = x.data_ptr<c10::BFloat16>();
  const c10::BFloat16* weight = weight_.data_ptr<c10::BFloat16>();
  const c10::BFloat16* b = bias.defined() ? bias_contiguous.data_ptr<c10::BFloat16>() : nullptr;
  c10::BFloat16* result = out.data_ptr<c10::BFloat16>();
  const int64_t blocks = (out_ + kBlock - 1) / kBlock;
  // ~1M multiply-adds a thread at least: smaller shares are not worth waking a thread for.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / (rows * in_ * kBlock));
  at::parallel_for(0, blocks, grain, [&](int64_t begin, int64_t end) {
    float acc[kMaxRows * kBlock];  // [M, width] with rows kBlock apart
    for (int64_t block = begin; block < end; ++block) {
      const int64_t first = block * kBlock, width = std::min(kBlock, out_ - first);
      run_kernel(kernel(rows, width), weight + first * in_, input, acc);
      finish_block(acc, kBlock, b != nullptr ? b + first : nullptr, relu, rows, width, result + first, out_);
    }
  });
  return out;
}

}  // namespace tfm
