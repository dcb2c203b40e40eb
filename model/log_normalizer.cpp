#include "model/log_normalizer.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <cstdint>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/row_reductions.h"
#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

/// Where normalize_rows() reads and writes: logits [N, V], normalizers [N], block maxima [N, blocks].
template <typename T>
struct NormalizerViews {
  const T* logits;
  float* normalizers;
  float* block_maxima;
  int64_t width, blocks;
};

template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void normalize(const NormalizerViews<T>& v, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const T* row = v.logits + r * v.width;
    float* maxima = v.block_maxima + r * v.blocks;
    float max = kRowNegInf;
    for (int64_t b = 0; b < v.blocks; ++b) {
      const int64_t first = b * kLogitBlock;
      maxima[b] = row_max<Lanes>(row + first, std::min(kLogitBlock, v.width - first));
      max = std::max(max, maxima[b]);
    }
    v.normalizers[r] = row_log_normalizer<Lanes>(row, v.width, max);
  }
}

TFM_LANE_KERNEL((void normalize_rows(const NormalizerViews<float>& v, int64_t begin, int64_t end)),
                normalize<Lanes>(v, begin, end);)
TFM_LANE_KERNEL((void normalize_rows(const NormalizerViews<c10::BFloat16>& v, int64_t begin, int64_t end)),
                normalize<Lanes>(v, begin, end);)

template <typename T>
void normalize_all(const torch::Tensor& rows, LogNormalizers& out) {
  const NormalizerViews<T> views{rows.data_ptr<T>(), out.normalizers.data_ptr<float>(),
                                 out.block_maxima.data_ptr<float>(), rows.size(1), out.block_maxima.size(1)};
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, views.width));
  team_parallel_for(0, rows.size(0), grain, [&](int64_t begin, int64_t end) { normalize_rows(views, begin, end); });
}

}  // namespace

bool log_normalizers_supported(const torch::Tensor& logits) {
  return logits.device().is_cpu() && logits.dim() == 2 &&
         (logits.scalar_type() == torch::kFloat32 || logits.scalar_type() == torch::kBFloat16);
}

LogNormalizers log_normalizers(const torch::Tensor& logits) {
  TORCH_CHECK(log_normalizers_supported(logits), "log_normalizers: [N, V] float32 or bfloat16 CPU logits");
  const auto rows = logits.contiguous();
  const int64_t count = rows.size(0), width = rows.size(1);
  LogNormalizers out{torch::empty({count}, torch::kFloat32),
                     torch::empty({count, logit_blocks(width)}, torch::kFloat32)};
  if (rows.scalar_type() == torch::kFloat32) {
    normalize_all<float>(rows, out);
  } else {
    normalize_all<c10::BFloat16>(rows, out);
  }
  return out;
}

}  // namespace tfm
