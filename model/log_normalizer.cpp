#include "model/log_normalizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "runtime/fast_exp.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <typename T>
TFM_ALWAYS_INLINE float row_max(const T* row, int64_t width) {
  float lanes[kVectorLanes];
  std::fill(lanes, lanes + kVectorLanes, kNegInf);
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) {
    for (int64_t j = 0; j < kVectorLanes; ++j) {
      const float x = static_cast<float>(row[c + j]);
      lanes[j] = x > lanes[j] ? x : lanes[j];
    }
  }
  for (; c < width; ++c) lanes[0] = std::max(lanes[0], static_cast<float>(row[c]));
  return *std::max_element(lanes, lanes + kVectorLanes);
}

template <typename T>
TFM_ALWAYS_INLINE float row_log_normalizer(const T* row, int64_t width) {
  const float max = row_max(row, width);
  if (max == kNegInf) return kNegInf;
  float lanes[kVectorLanes] = {};
  int64_t c = 0;
  for (; c + kVectorLanes <= width; c += kVectorLanes) {
    for (int64_t j = 0; j < kVectorLanes; ++j) lanes[j] += exp_nonpositive(static_cast<float>(row[c + j]) - max);
  }
  for (; c < width; ++c) lanes[0] += exp_nonpositive(static_cast<float>(row[c]) - max);
  float sum = 0.0F;
  for (float lane : lanes) sum += lane;
  return max + std::log(sum);
}

TFM_VECTOR_CLONES void normalize_rows(const float* logits, int64_t width, float* out, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) out[r] = row_log_normalizer(logits + r * width, width);
}
TFM_VECTOR_CLONES void normalize_rows(const c10::BFloat16* logits, int64_t width, float* out, int64_t begin,
                                      int64_t end) {
  for (int64_t r = begin; r < end; ++r) out[r] = row_log_normalizer(logits + r * width, width);
}

}  // namespace

bool log_normalizers_supported(const torch::Tensor& logits) {
  return logits.device().is_cpu() && logits.dim() == 2 &&
         (logits.scalar_type() == torch::kFloat32 || logits.scalar_type() == torch::kBFloat16);
}

torch::Tensor log_normalizers(const torch::Tensor& logits) {
  TORCH_CHECK(log_normalizers_supported(logits), "log_normalizers: [N, V] float32 or bfloat16 CPU logits");
  const auto rows = logits.contiguous();
  const int64_t count = rows.size(0), width = rows.size(1);
  auto out = torch::empty({count}, torch::kFloat32);
  float* out_data = out.data_ptr<float>();
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, width));
  at::parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    if (rows.scalar_type() == torch::kFloat32) {
      normalize_rows(rows.data_ptr<float>(), width, out_data, begin, end);
    } else {
      normalize_rows(rows.data_ptr<c10::BFloat16>(), width, out_data, begin, end);
    }
  });
  return out;
}

}  // namespace tfm
