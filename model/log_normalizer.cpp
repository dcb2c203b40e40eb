#include "model/log_normalizer.h"

#include <algorithm>
#include <cstdint>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/row_reductions.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

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
