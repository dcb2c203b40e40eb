#include "model/layer_norm_rows.h"
#include "runtime/step_team.h"

#include <optional>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/bfloat16_norm.h"
#include "model/layer_norm_kernel.h"
#include "runtime/threads.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

/// Whether a CPU tensor is small enough that its rows are normalized on the calling thread alone.
bool few_rows(const torch::Tensor& x) { return x.numel() < at::internal::GRAIN_SIZE; }

/// Whether `norm` over `x` can run LibTorch's kernel directly: inference, a CPU float32 or bfloat16
/// x contiguous, and an affine norm over its last dimension in x's dtype.
bool direct_kernel_fits(const torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  const auto& options = norm->options;
  const auto dtype = x.scalar_type();
  return layer_norm_kernel_available() && x.is_cpu() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         x.is_contiguous() && x.dim() >= 1 && x.numel() > 0 && options.elementwise_affine() &&
         options.normalized_shape().size() == 1 && options.normalized_shape()[0] == x.size(-1) &&
         norm->weight.scalar_type() == dtype && norm->bias.scalar_type() == dtype && norm->weight.is_contiguous() &&
         norm->bias.is_contiguous() &&
         !(torch::GradMode::is_enabled() && (x.requires_grad() || norm->weight.requires_grad()));
}

/// into += other over tensors of one shape, both contiguous (sum_in_place_fits). float32: each
/// element's sum rounded once, as LibTorch's add_ does (its a + 1 x b is exact), without the op,
/// which at a decoding step's few rows costs more than the additions.
void add_into(torch::Tensor& into, const torch::Tensor& other) {
  if (into.scalar_type() != torch::kFloat32) {
    into.add_(other);
    return;
  }
  float* sums = into.data_ptr<float>();
  const float* added = other.data_ptr<float>();
  team_parallel_for(0, into.numel(), at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sums[i] += added[i];
  });
}

/// norm(x + added) (added undefined: norm(x)) into out (x, added, or a tensor of its own): in
/// bfloat16 tfm's own kernel in one pass (model/bfloat16_norm.h: LibTorch runs an add and two AVX2
/// kernels), else the sum and then LibTorch's kernel; on the calling thread alone for few rows.
void normalize_into(const torch::nn::LayerNorm& norm, const torch::Tensor& x, const torch::Tensor& added,
                    torch::Tensor& out) {
  std::optional<CallingThreadOnly> one_thread;
  if (few_rows(x)) one_thread.emplace();
  if (bfloat16_layer_norm_fits(x, norm->weight, norm->bias)) {
    return bfloat16_layer_norm(x, added, norm->weight, norm->bias, norm->options.eps(), out);
  }
  if (added.defined()) {
    TORCH_CHECK(out.is_same(x) || out.is_same(added), "normalize_into: the sum is written over x or added");
    add_into(out, out.is_same(x) ? added : x);
  }
  layer_norm_kernel(added.defined() ? out : x, norm->weight, norm->bias, norm->options.eps(), out);
}

/// Whether x + sublayer can be written over sublayer: inference, one CPU dtype (float32 or
/// bfloat16), one shape, both contiguous, and sublayer not sharing x's memory.
bool sum_in_place_fits(const torch::Tensor& x, const torch::Tensor& sublayer) {
  const auto dtype = x.scalar_type();
  return x.is_cpu() && sublayer.is_cpu() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         sublayer.scalar_type() == dtype && x.sizes() == sublayer.sizes() && x.is_contiguous() &&
         sublayer.is_contiguous() && !sublayer.is_alias_of(x) &&
         !(torch::GradMode::is_enabled() && (x.requires_grad() || sublayer.requires_grad()));
}

}  // namespace

torch::Tensor layer_norm_rows(torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  if (direct_kernel_fits(norm, x)) {
    auto out = torch::empty_like(x);
    normalize_into(norm, x, {}, out);
    return out;
  }
  std::optional<CallingThreadOnly> one_thread;
  if (x.is_cpu() && few_rows(x)) one_thread.emplace();
  return norm(x);
}

torch::Tensor residual_layer_norm_rows(torch::nn::LayerNorm& norm, const torch::Tensor& x, torch::Tensor sublayer) {
  if (!sum_in_place_fits(x, sublayer) || !direct_kernel_fits(norm, x)) return layer_norm_rows(norm, x + sublayer);
  // float32: x + sublayer's bits (float addition commutes), then LibTorch's norm over them in
  // place (each row is read whole before it is written); bfloat16: both in one pass, the sum in float.
  normalize_into(norm, sublayer, x, sublayer);
  return sublayer;
}

torch::Tensor residual_sum_rows(const torch::Tensor& x, torch::Tensor sublayer) {
  if (!sum_in_place_fits(x, sublayer)) return x + sublayer;
  if (x.scalar_type() == torch::kBFloat16 && x.numel() % kVectorLanes == 0) {
    std::optional<CallingThreadOnly> one_thread;
    if (few_rows(x)) one_thread.emplace();
    bfloat16_add_into(x, sublayer);  // LibTorch's add's bits, without its AVX2 conversions
    return sublayer;
  }
  add_into(sublayer, x);
  return sublayer;
}

}  // namespace tfm
