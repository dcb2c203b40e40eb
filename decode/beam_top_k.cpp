#include "decode/beam_top_k.h"

#include <algorithm>
#include <limits>

#include <ATen/Parallel.h>
#include <torch/torch.h>

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kChunk = 16;  // cells tested together against the current threshold

/// The best `count` cells of one sentence's K rows, kept sorted (best first, ties in id order).
class TopList {
 public:
  TopList(float* scores, int64_t* ids, int64_t count) : scores_(scores), ids_(ids), count_(count) {
    std::fill(scores_, scores_ + count_, kNegInf);
    std::fill(ids_, ids_ + count_, 0);
  }
  /// Lowest kept score: a cell must beat it strictly to enter (an equal one has a later id).
  float threshold() const { return scores_[count_ - 1]; }
  void offer(float score, int64_t id) {
    if (!(score > threshold())) return;
    int64_t at = count_ - 1;
    while (at > 0 && scores_[at - 1] < score) {
      scores_[at] = scores_[at - 1];
      ids_[at] = ids_[at - 1];
      --at;
    }
    scores_[at] = score;
    ids_[at] = id;
  }

 private:
  float* scores_;
  int64_t* ids_;
  int64_t count_;
};

/// Offers row `row` (beam score `offset` added to each cell) to `top`. Most chunks hold no cell
/// above the threshold; the test over a chunk is branch-free so that it vectorizes.
void scan_row(const float* row, int64_t width, float offset, int64_t first_id, TopList& top) {
  int64_t c = 0;
  for (; c + kChunk <= width; c += kChunk) {
    const float threshold = top.threshold();
    int any = 0;
    for (int64_t i = 0; i < kChunk; ++i) any |= static_cast<int>(offset + row[c + i] > threshold);
    if (any == 0) continue;
    for (int64_t i = 0; i < kChunk; ++i) top.offer(offset + row[c + i], first_id + c + i);
  }
  for (; c < width; ++c) top.offer(offset + row[c], first_id + c);
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> beam_top_k(const torch::Tensor& log_probs, const torch::Tensor& beam_scores,
                                                   int64_t beam, int64_t count) {
  const int64_t rows = log_probs.size(0);
  const int64_t width = log_probs.size(1);
  const int64_t sentences = rows / beam;
  TORCH_CHECK(rows % beam == 0 && beam_scores.numel() == rows, "beam_top_k: ", rows, " rows, beam ", beam);
  TORCH_CHECK(count >= 1 && count <= beam * width, "beam_top_k: count ", count, " of ", beam * width, " cells");
  if (!log_probs.device().is_cpu() || log_probs.scalar_type() != torch::kFloat32) {
    const auto totals = (beam_scores.unsqueeze(1) + log_probs).view({sentences, -1});
    const auto [scores, ids] = totals.topk(count);
    return {scores.to(torch::kCPU), ids.to(torch::kCPU)};
  }
  const auto cells = log_probs.contiguous();
  const auto offsets = beam_scores.to(torch::kFloat32).contiguous();
  auto scores = torch::empty({sentences, count}, torch::kFloat32);
  auto ids = torch::empty({sentences, count}, torch::kLong);
  const float* cell_data = cells.data_ptr<float>();
  const float* offset_data = offsets.data_ptr<float>();
  float* score_data = scores.data_ptr<float>();
  int64_t* id_data = ids.data_ptr<int64_t>();
  at::parallel_for(0, sentences, 1, [&](int64_t begin, int64_t end) {
    for (int64_t a = begin; a < end; ++a) {
      TopList top(score_data + a * count, id_data + a * count, count);
      for (int64_t k = 0; k < beam; ++k) {
        const int64_t row = a * beam + k;
        const float offset = offset_data[row];
        if (offset == kNegInf) continue;  // an empty beam slot: every sum is -inf
        scan_row(cell_data + row * width, width, offset, k * width, top);
      }
    }
  });
  return {scores, ids};
}

}  // namespace tfm
