#include "model/cross_entropy_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "model/row_reductions.h"
#include "runtime/fast_exp.h"
#include "runtime/float_lanes.h"
#include "runtime/parallel_for.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

/// Rows per parallel task: about 32k logits, so that small batches stay on one thread.
int64_t row_grain(int64_t width) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, width)); }

struct RowOutputs {
  float* log_normalizer;
  float* target_logit;
  float* mean_logit;
};

template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void reduce_rows(const T* logits, const int64_t* target, int64_t width, RowOutputs out, int64_t begin,
                                   int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const T* row = logits + r * width;
    out.log_normalizer[r] = row_log_normalizer<Lanes>(row, width);
    out.target_logit[r] = static_cast<float>(row[target[r]]);
    out.mean_logit[r] = row_sum<Lanes>(row, width) / static_cast<float>(width);
  }
}
TFM_LANE_KERNEL((void reduce_rows_of(const float* logits, const int64_t* target, int64_t width, RowOutputs out,
                                     int64_t begin, int64_t end)),
                reduce_rows<Lanes>(logits, target, width, out, begin, end);)
TFM_LANE_KERNEL((void reduce_rows_of(const c10::BFloat16* logits, const int64_t* target, int64_t width, RowOutputs out,
                                     int64_t begin, int64_t end)),
                reduce_rows<Lanes>(logits, target, width, out, begin, end);)

struct GradientInputs {
  const int64_t* target;
  const float* log_normalizer;
  const float* row_scale;
  float smoothing;  // epsilon / V
  float on_target;  // 1 - epsilon
};

/// The same operations in the same order as the op-by-op backward: (e^(z - lse) - epsilon / V),
/// minus (1 - epsilon) at the target, times the row's scale; rounded once to T.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void gradient_rows(const T* logits, T* grad, int64_t width, GradientInputs in, int64_t begin,
                                     int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const T* row = logits + r * width;
    T* out = grad + r * width;
    const float scale = in.row_scale[r];
    if (scale == 0.0F) {
      std::fill(out, out + width, static_cast<T>(0.0F));
      continue;
    }
    const float lse = in.log_normalizer[r];
    int64_t c = 0;
    for (; c + kVectorLanes <= width; c += kVectorLanes) {
      store_lanes(out + c, (exp_nonpositive(load_lanes<Lanes>(row + c) - lse) - in.smoothing) * scale);
    }
    for (; c < width; ++c) {
      out[c] = static_cast<T>((exp_nonpositive(static_cast<float>(row[c]) - lse) - in.smoothing) * scale);
    }
    const int64_t y = in.target[r];
    out[y] =
        static_cast<T>(((exp_nonpositive(static_cast<float>(row[y]) - lse) - in.smoothing) + -in.on_target) * scale);
  }
}
TFM_LANE_KERNEL((void gradient_rows_of(const float* logits, float* grad, int64_t width, GradientInputs in,
                                       int64_t begin, int64_t end)),
                gradient_rows<Lanes>(logits, grad, width, in, begin, end);)
TFM_LANE_KERNEL((void gradient_rows_of(const c10::BFloat16* logits, c10::BFloat16* grad, int64_t width,
                                       GradientInputs in, int64_t begin, int64_t end)),
                gradient_rows<Lanes>(logits, grad, width, in, begin, end);)

/// reduce_rows() and then the gradient, row by row, with one exponential per logit where the two
/// took two: e^(z - max) is kept in `exps` [width] from the normalizer's sum, and the gradient
/// is e^(z - max) / sum instead of e^(z - lse) (the same value to a float rounding or two; the
/// exponentials were most of the cost). The reductions are reduce_rows()'s bits.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void reduce_and_differentiate_rows(const T* logits, T* grad, int64_t width, RowOutputs out,
                                                     GradientInputs in, int64_t begin, int64_t end, float* exps) {
  for (int64_t r = begin; r < end; ++r) {
    const T* row = logits + r * width;
    const float max = row_max<Lanes>(row, width);
    out.target_logit[r] = static_cast<float>(row[in.target[r]]);
    out.mean_logit[r] = row_sum<Lanes>(row, width) / static_cast<float>(width);
    if (max == kRowNegInf) {  // no finite logit: as the two passes do
      out.log_normalizer[r] = kRowNegInf;
      gradient_rows<Lanes>(logits, grad, width, in, r, r + 1);
      continue;
    }
    const float sum = row_exps<Lanes>(row, width, max, exps);
    out.log_normalizer[r] = max + std::log(sum);
    T* to = grad + r * width;
    const float scale = in.row_scale[r];
    if (scale == 0.0F) {
      std::fill(to, to + width, static_cast<T>(0.0F));
      continue;
    }
    const float inverse = 1.0F / sum;
    int64_t c = 0;
    for (; c + kVectorLanes <= width; c += kVectorLanes) {
      store_lanes(to + c, (load_lanes<Lanes>(exps + c) * inverse - in.smoothing) * scale);
    }
    for (; c < width; ++c) to[c] = static_cast<T>((exps[c] * inverse - in.smoothing) * scale);
    const int64_t y = in.target[r];
    to[y] = static_cast<T>(((exps[y] * inverse - in.smoothing) + -in.on_target) * scale);
  }
}
TFM_LANE_KERNEL((void reduce_and_differentiate_rows_of(const float* logits, float* grad, int64_t width, RowOutputs out,
                                                       GradientInputs in, int64_t begin, int64_t end, float* exps)),
                reduce_and_differentiate_rows<Lanes>(logits, grad, width, out, in, begin, end, exps);)
TFM_LANE_KERNEL((void reduce_and_differentiate_rows_of(const c10::BFloat16* logits, c10::BFloat16* grad, int64_t width,
                                                       RowOutputs out, GradientInputs in, int64_t begin, int64_t end,
                                                       float* exps)),
                reduce_and_differentiate_rows<Lanes>(logits, grad, width, out, in, begin, end, exps);)

/// Uninitialized reductions of `count` rows.
CrossEntropyRows empty_rows(int64_t count) {
  return {torch::empty({count}, torch::kFloat32), torch::empty({count}, torch::kFloat32),
          torch::empty({count}, torch::kFloat32)};
}

RowOutputs outputs_of(CrossEntropyRows& rows) {
  return {rows.log_normalizer.data_ptr<float>(), rows.target_logit.data_ptr<float>(),
          rows.mean_logit.data_ptr<float>()};
}

}  // namespace

bool cross_entropy_rows_supported(const torch::Tensor& logits) {
  return logits.device().is_cpu() && logits.dim() == 2 &&
         (logits.scalar_type() == torch::kFloat32 || logits.scalar_type() == torch::kBFloat16);
}

CrossEntropyRows cross_entropy_rows(const torch::Tensor& logits, const torch::Tensor& target) {
  TORCH_CHECK(cross_entropy_rows_supported(logits), "cross_entropy_rows: [N, V] float32 or bfloat16 CPU logits");
  const auto rows = logits.contiguous();
  const auto targets = target.to(torch::kLong).contiguous();
  const int64_t count = rows.size(0), width = rows.size(1);
  CrossEntropyRows result = empty_rows(count);
  const RowOutputs out = outputs_of(result);
  const int64_t* target_data = targets.data_ptr<int64_t>();
  parallel_for(0, count, row_grain(width), [&](int64_t begin, int64_t end) {
    if (rows.scalar_type() == torch::kFloat32) {
      reduce_rows_of(rows.data_ptr<float>(), target_data, width, out, begin, end);
    } else {
      reduce_rows_of(rows.data_ptr<c10::BFloat16>(), target_data, width, out, begin, end);
    }
  });
  return result;
}

torch::Tensor cross_entropy_gradient(const torch::Tensor& logits, const torch::Tensor& target,
                                     const torch::Tensor& log_normalizer, const torch::Tensor& row_scale,
                                     double epsilon) {
  TORCH_CHECK(cross_entropy_rows_supported(logits), "cross_entropy_gradient: [N, V] float32 or bfloat16 CPU logits");
  const auto rows = logits.contiguous();
  const auto targets = target.to(torch::kLong).contiguous();
  const auto normalizers = log_normalizer.to(torch::kFloat32).contiguous();
  const auto scales = row_scale.to(torch::kFloat32).contiguous();
  const int64_t count = rows.size(0), width = rows.size(1);
  auto grad = torch::empty_like(rows);
  const GradientInputs in{targets.data_ptr<int64_t>(), normalizers.data_ptr<float>(), scales.data_ptr<float>(),
                          static_cast<float>(epsilon / static_cast<double>(width)), static_cast<float>(1.0 - epsilon)};
  parallel_for(0, count, row_grain(width), [&](int64_t begin, int64_t end) {
    if (rows.scalar_type() == torch::kFloat32) {
      gradient_rows_of(rows.data_ptr<float>(), grad.data_ptr<float>(), width, in, begin, end);
    } else {
      gradient_rows_of(rows.data_ptr<c10::BFloat16>(), grad.data_ptr<c10::BFloat16>(), width, in, begin, end);
    }
  });
  return grad;
}

CrossEntropyRows cross_entropy_rows_and_gradient(const torch::Tensor& logits, const torch::Tensor& target,
                                                 const torch::Tensor& row_scale, double epsilon,
                                                 torch::Tensor& gradient) {
  TORCH_CHECK(cross_entropy_rows_supported(logits),
              "cross_entropy_rows_and_gradient: [N, V] float32 or bfloat16 CPU logits");
  const auto rows = logits.contiguous();
  const auto targets = target.to(torch::kLong).contiguous();
  const auto scales = row_scale.to(torch::kFloat32).contiguous();
  const int64_t count = rows.size(0), width = rows.size(1);
  CrossEntropyRows result = empty_rows(count);
  const RowOutputs out = outputs_of(result);
  const GradientInputs in{targets.data_ptr<int64_t>(), out.log_normalizer, scales.data_ptr<float>(),
                          static_cast<float>(epsilon / static_cast<double>(width)), static_cast<float>(1.0 - epsilon)};
  gradient = torch::empty_like(rows);
  parallel_for(0, count, row_grain(width), [&](int64_t begin, int64_t end) {
    std::vector<float> exps(static_cast<size_t>(width));  // one row's e^(z - max)
    if (rows.scalar_type() == torch::kFloat32) {
      reduce_and_differentiate_rows_of(rows.data_ptr<float>(), gradient.data_ptr<float>(), width, out, in, begin, end,
                                       exps.data());
    } else {
      reduce_and_differentiate_rows_of(rows.data_ptr<c10::BFloat16>(), gradient.data_ptr<c10::BFloat16>(), width, out,
                                       in, begin, end, exps.data());
    }
  });
  return result;
}

}  // namespace tfm
