#include "model/attention_softmax.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/dropout.h"
#include "model/row_reductions.h"
#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

using BFloat16 = c10::BFloat16;

/// Where a row's mask lies: row r = (b, h, t) of [B, H, T] reads mask + b * batch + h * head +
/// t * time, one bool per key (strides 0 where the mask broadcasts).
struct MaskRows {
  const bool* mask = nullptr;  // none: every key kept
  int64_t heads = 1, time = 1, batch = 0, head = 0, step = 0;
  const bool* row(int64_t r) const {
    if (mask == nullptr) return nullptr;
    return mask + (r / (heads * time)) * batch + ((r / time) % heads) * head + (r % time) * step;
  }
};

/// The forward pass's tensors, [rows, width] each; noise and weights are null without dropout.
struct ForwardRows {
  const BFloat16* scores;
  MaskRows mask;
  const BFloat16* noise;
  BFloat16* probs;
  BFloat16* weights;
  int64_t width;
  float scale;
};

/// The backward pass's: d weights, the saved probabilities and noise -> d scores.
struct BackwardRows {
  const BFloat16* grad;
  const BFloat16* probs;
  const BFloat16* noise;
  BFloat16* grad_scores;
  int64_t width;
  float scale;
};

/// Rows [begin, end): probs = softmax over the kept keys of scale * scores, 0 elsewhere and in a
/// row with no key; weights = probs * noise. buffer: width floats.
template <typename Lanes>
TFM_ALWAYS_INLINE void softmax_rows(const ForwardRows& v, int64_t begin, int64_t end, float* buffer) {
  const int64_t width = v.width;
  for (int64_t r = begin; r < end; ++r) {
    const BFloat16* scores = v.scores + r * width;
    const bool* keep = v.mask.row(r);
    for (int64_t j = 0; j < width; ++j) {
      buffer[j] = (keep == nullptr || keep[j]) ? static_cast<float>(scores[j]) * v.scale : kRowNegInf;
    }
    const float max = row_max<Lanes>(buffer, width);
    BFloat16* probs = v.probs + r * width;
    BFloat16* weights = v.weights == nullptr ? nullptr : v.weights + r * width;
    if (max == kRowNegInf) {
      std::fill(probs, probs + width, BFloat16(0.0F));
      if (weights != nullptr) std::fill(weights, weights + width, BFloat16(0.0F));
      continue;
    }
    Lanes sums{};
    int64_t j = 0;
    for (; j + kVectorLanes <= width; j += kVectorLanes) {
      const Lanes e = exp_nonpositive(load_lanes<Lanes>(buffer + j) - max);
      store_lanes(buffer + j, e);
      sums += e;
    }
    float first = sums[0];
    for (; j < width; ++j) first += buffer[j] = exp_nonpositive(buffer[j] - max);
    const float inverse = 1.0F / sum_in_lane_order(sums, first);
    for (j = 0; j + kVectorLanes <= width; j += kVectorLanes) {
      const Lanes p = load_lanes<Lanes>(buffer + j) * inverse;
      store_lanes(probs + j, p);
      if (weights != nullptr) store_lanes(weights + j, p * load_lanes<Lanes>(v.noise + r * width + j));
    }
    for (; j < width; ++j) {
      const float p = buffer[j] * inverse;
      probs[j] = BFloat16(p);
      if (weights != nullptr) weights[j] = BFloat16(p * static_cast<float>(v.noise[r * width + j]));
    }
  }
}

/// Rows [begin, end): with g = grad * noise (the gradient reaching the probabilities),
/// grad_scores = scale * probs * (g - sum_j g_j probs_j): the softmax's backward, through the scale.
template <typename Lanes>
TFM_ALWAYS_INLINE void softmax_gradient_rows(const BackwardRows& v, int64_t begin, int64_t end) {
  const int64_t width = v.width;
  for (int64_t r = begin; r < end; ++r) {
    const BFloat16* grad = v.grad + r * width;
    const BFloat16* probs = v.probs + r * width;
    const BFloat16* noise = v.noise == nullptr ? nullptr : v.noise + r * width;
    BFloat16* out = v.grad_scores + r * width;
    Lanes dots{};
    int64_t j = 0;
    for (; j + kVectorLanes <= width; j += kVectorLanes) {
      Lanes g = load_lanes<Lanes>(grad + j);
      if (noise != nullptr) g = g * load_lanes<Lanes>(noise + j);
      dots += g * load_lanes<Lanes>(probs + j);
    }
    float first = dots[0];
    for (; j < width; ++j) {
      const float g = static_cast<float>(grad[j]) * (noise == nullptr ? 1.0F : static_cast<float>(noise[j]));
      first += g * static_cast<float>(probs[j]);
    }
    const float dot = sum_in_lane_order(dots, first);
    for (j = 0; j + kVectorLanes <= width; j += kVectorLanes) {
      Lanes g = load_lanes<Lanes>(grad + j);
      if (noise != nullptr) g = g * load_lanes<Lanes>(noise + j);
      store_lanes(out + j, (load_lanes<Lanes>(probs + j) * v.scale) * (g - dot));
    }
    for (; j < width; ++j) {
      const float g = static_cast<float>(grad[j]) * (noise == nullptr ? 1.0F : static_cast<float>(noise[j]));
      out[j] = BFloat16(static_cast<float>(probs[j]) * v.scale * (g - dot));
    }
  }
}

TFM_LANE_KERNEL((void softmax_rows(const ForwardRows& v, int64_t begin, int64_t end, float* buffer)),
                softmax_rows<Lanes>(v, begin, end, buffer);)
TFM_LANE_KERNEL((void softmax_gradient_rows(const BackwardRows& v, int64_t begin, int64_t end)),
                softmax_gradient_rows<Lanes>(v, begin, end);)

/// Rows per task: about 32k elements, as LibTorch's element-wise kernels take.
int64_t grain_of(int64_t width) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, width)); }

/// A custom Function's tensor arguments must be defined: an empty tensor stands for none.
torch::Tensor or_empty(const torch::Tensor& x, torch::ScalarType dtype) {
  return x.defined() ? x : torch::empty({0}, torch::TensorOptions(dtype));
}

MaskRows mask_rows(const torch::Tensor& mask, const torch::Tensor& scores, torch::Tensor& holder) {
  MaskRows rows;
  if (mask.numel() == 0) return rows;
  holder = mask.expand(scores.sizes());
  if (holder.stride(3) != 1) holder = holder.contiguous();
  rows.mask = holder.data_ptr<bool>();
  rows.heads = scores.size(1);
  rows.time = scores.size(2);
  rows.batch = holder.stride(0);
  rows.head = holder.stride(1);
  rows.step = holder.stride(2);
  return rows;
}

class AttentionSoftmax : public torch::autograd::Function<AttentionSoftmax> {
 public:
  /// scores: [B, H, T, S] contiguous, mask: as attention_softmax() or empty, noise: like scores or
  /// empty -> weights [B, H, T, S]
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               const torch::Tensor& mask, double scale, const torch::Tensor& noise_or_empty) {
    torch::Tensor mask_holder;
    const torch::Tensor noise = noise_or_empty.numel() > 0 ? noise_or_empty : torch::Tensor();
    const auto probs = torch::empty_like(scores, torch::MemoryFormat::Contiguous);
    const auto weights = noise.defined() ? torch::empty_like(probs) : probs;
    const int64_t width = scores.size(3);
    const ForwardRows rows{scores.data_ptr<BFloat16>(),
                           mask_rows(mask, scores, mask_holder),
                           noise.defined() ? noise.data_ptr<BFloat16>() : nullptr,
                           probs.data_ptr<BFloat16>(),
                           noise.defined() ? weights.data_ptr<BFloat16>() : nullptr,
                           width,
                           static_cast<float>(scale)};
    at::parallel_for(0, scores.numel() / std::max<int64_t>(1, width), grain_of(width), [&](int64_t begin, int64_t end) {
      std::vector<float> buffer(static_cast<size_t>(width));
      softmax_rows(rows, begin, end, buffer.data());
    });
    ctx->save_for_backward({probs, noise_or_empty});
    ctx->saved_data["scale"] = scale;
    return weights;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& probs = saved[0];
    const auto noise = saved[1].numel() > 0 ? saved[1] : torch::Tensor();
    const auto grad = grad_outputs[0].to(probs.scalar_type()).contiguous();
    auto grad_scores = torch::empty_like(probs);
    const int64_t width = probs.size(3);
    const BackwardRows rows{grad.data_ptr<BFloat16>(),
                            probs.data_ptr<BFloat16>(),
                            noise.defined() ? noise.data_ptr<BFloat16>() : nullptr,
                            grad_scores.data_ptr<BFloat16>(),
                            width,
                            static_cast<float>(ctx->saved_data["scale"].toDouble())};
    at::parallel_for(0, probs.numel() / std::max<int64_t>(1, width), grain_of(width),
                     [&](int64_t begin, int64_t end) { softmax_gradient_rows(rows, begin, end); });
    return {grad_scores, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool attention_softmax_supported(const torch::Tensor& scores, const torch::Tensor& mask) {
  return scores.is_cpu() && scores.dim() == 4 && scores.scalar_type() == torch::kBFloat16 &&
         (!mask.defined() || (mask.is_cpu() && mask.scalar_type() == torch::kBool && mask.dim() <= 4));
}

torch::Tensor attention_softmax(const torch::Tensor& scores, const torch::Tensor& mask, double scale, double dropout,
                                bool training) {
  TORCH_CHECK(attention_softmax_supported(scores, mask),
              "attention_softmax: CPU bfloat16 scores [B, H, T, S] and a bool mask or none");
  const auto rows = scores.contiguous();
  torch::Tensor noise;
  if (training && dropout > 0.0) noise = dropout_noise(rows, dropout);
  return AttentionSoftmax::apply(rows, or_empty(mask, torch::kBool), scale, or_empty(noise, rows.scalar_type()));
}

}  // namespace tfm
