#include "model/attention_softmax.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/attention_rows.h"
#include "model/dropout.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

using BFloat16 = c10::BFloat16;

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
    softmax_row<Lanes>(buffer, width, v.probs + r * width, v.noise == nullptr ? nullptr : v.noise + r * width,
                       v.weights == nullptr ? nullptr : v.weights + r * width);
  }
}

/// Rows [begin, end): the softmax's backward (softmax_gradient_row).
template <typename Lanes>
TFM_ALWAYS_INLINE void softmax_gradient_rows(const BackwardRows& v, int64_t begin, int64_t end) {
  const int64_t width = v.width;
  for (int64_t r = begin; r < end; ++r) {
    softmax_gradient_row<Lanes>(v.grad + r * width, v.probs + r * width,
                                v.noise == nullptr ? nullptr : v.noise + r * width, width, v.scale,
                                v.grad_scores + r * width);
  }
}

TFM_LANE_KERNEL((void softmax_rows(const ForwardRows& v, int64_t begin, int64_t end, float* buffer)),
                softmax_rows<Lanes>(v, begin, end, buffer);)
TFM_LANE_KERNEL((void softmax_gradient_rows(const BackwardRows& v, int64_t begin, int64_t end)),
                softmax_gradient_rows<Lanes>(v, begin, end);)

/// Rows per task: about 32k elements, as LibTorch's element-wise kernels take.
int64_t grain_of(int64_t width) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, width)); }

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
                           mask_rows(mask, scores.sizes(), mask_holder),
                           noise.defined() ? noise.data_ptr<BFloat16>() : nullptr,
                           probs.data_ptr<BFloat16>(),
                           noise.defined() ? weights.data_ptr<BFloat16>() : nullptr,
                           width,
                           static_cast<float>(scale)};
    team_parallel_for(0, scores.numel() / std::max<int64_t>(1, width), grain_of(width),
                      [&](int64_t begin, int64_t end) {
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
    team_parallel_for(0, probs.numel() / std::max<int64_t>(1, width), grain_of(width),
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
