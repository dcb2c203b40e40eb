#include "decode/beam_top_k.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <limits>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/log_normalizer.h"
#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

/// Offers cells [begin, end) of a row (beam score `offset` added to each) to `top`. Most chunks
/// hold no cell above the threshold: a chunk is tested whole, in vector lanes, before its cells are.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void scan_cells(const T* row, int64_t begin, int64_t end, float offset, int64_t first_id,
                                  TopList& top) {
  int64_t c = begin;
  for (; c + kVectorLanes <= end; c += kVectorLanes) {
    if (!(max_of_lanes(load_lanes<Lanes>(row + c) + offset) > top.threshold())) continue;
    for (int64_t i = 0; i < kVectorLanes; ++i) top.offer(offset + static_cast<float>(row[c + i]), first_id + c + i);
  }
  for (; c < end; ++c) top.offer(offset + static_cast<float>(row[c]), first_id + c);
}

/// Offers a row to `top`, skipping the blocks of kLogitBlock cells whose maximum (`maxima`, or
/// nullptr: none known) cannot beat the threshold: offset + cell <= offset + maximum in floats.
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void scan_row(const T* row, const float* maxima, int64_t width, float offset, int64_t first_id,
                                TopList& top) {
  if (maxima == nullptr) {
    scan_cells<Lanes>(row, 0, width, offset, first_id, top);
    return;
  }
  for (int64_t begin = 0, b = 0; begin < width; begin += kLogitBlock, ++b) {
    if (offset + maxima[b] > top.threshold())
      scan_cells<Lanes>(row, begin, std::min(width, begin + kLogitBlock), offset, first_id, top);
  }
}

/// Where the selection reads and writes: cells [A*K, V'], offsets [A*K], scores and ids [A, count].
template <typename T>
struct TopKViews {
  const T* cells;
  const float* offsets;
  const float* block_maxima;  // [A*K, blocks] or nullptr
  float* scores;
  int64_t* ids;
  int64_t width, beam, count, blocks;
};

/// Sentences [begin, end).
template <typename Lanes, typename T>
TFM_ALWAYS_INLINE void select_sentences(const TopKViews<T>& v, int64_t begin, int64_t end) {
  for (int64_t a = begin; a < end; ++a) {
    TopList top(v.scores + a * v.count, v.ids + a * v.count, v.count);
    for (int64_t k = 0; k < v.beam; ++k) {
      const int64_t row = a * v.beam + k;
      const float offset = v.offsets[row];
      if (offset == kNegInf) continue;  // an empty beam slot: every sum is -inf
      const float* maxima = v.block_maxima != nullptr ? v.block_maxima + row * v.blocks : nullptr;
      scan_row<Lanes>(v.cells + row * v.width, maxima, v.width, offset, k * v.width, top);
    }
  }
}

TFM_LANE_KERNEL((void select_range(const TopKViews<float>& v, int64_t begin, int64_t end)),
                select_sentences<Lanes>(v, begin, end);)
TFM_LANE_KERNEL((void select_range(const TopKViews<c10::BFloat16>& v, int64_t begin, int64_t end)),
                select_sentences<Lanes>(v, begin, end);)

template <typename T>
void select_all(const torch::Tensor& cells, const torch::Tensor& offsets, const torch::Tensor& block_maxima,
                torch::Tensor& scores, torch::Tensor& ids, int64_t beam) {
  const TopKViews<T> views{cells.data_ptr<T>(),
                           offsets.data_ptr<float>(),
                           block_maxima.defined() ? block_maxima.data_ptr<float>() : nullptr,
                           scores.data_ptr<float>(),
                           ids.data_ptr<int64_t>(),
                           cells.size(1),
                           beam,
                           scores.size(1),
                           block_maxima.defined() ? block_maxima.size(1) : 0};
  team_parallel_for(0, scores.size(0), 1, [&](int64_t begin, int64_t end) { select_range(views, begin, end); });
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> beam_top_k(const torch::Tensor& log_probs, const torch::Tensor& beam_scores,
                                                   int64_t beam, int64_t count, const torch::Tensor& block_maxima) {
  const int64_t rows = log_probs.size(0);
  const int64_t width = log_probs.size(1);
  const int64_t sentences = rows / beam;
  TORCH_CHECK(rows % beam == 0 && beam_scores.numel() == rows, "beam_top_k: ", rows, " rows, beam ", beam);
  TORCH_CHECK(count >= 1 && count <= beam * width, "beam_top_k: count ", count, " of ", beam * width, " cells");
  const bool float_cells = log_probs.scalar_type() == torch::kFloat32 || log_probs.scalar_type() == torch::kBFloat16;
  if (!log_probs.device().is_cpu() || !float_cells) {
    const auto totals = (beam_scores.unsqueeze(1) + log_probs.to(torch::kFloat32)).view({sentences, -1});
    const auto [scores, ids] = totals.topk(count);
    return {scores.to(torch::kCPU), ids.to(torch::kCPU)};
  }
  const auto cells = log_probs.contiguous();
  const auto offsets = beam_scores.to(torch::kFloat32).contiguous();
  const auto maxima = block_maxima.defined() ? block_maxima.to(torch::kFloat32).contiguous() : block_maxima;
  TORCH_CHECK(!maxima.defined() || maxima.sizes() == torch::IntArrayRef({rows, logit_blocks(width)}),
              "beam_top_k: block maxima ", maxima.sizes(), " for ", rows, " rows of ", width);
  auto scores = torch::empty({sentences, count}, torch::kFloat32);
  auto ids = torch::empty({sentences, count}, torch::kLong);
  if (cells.scalar_type() == torch::kFloat32) {
    select_all<float>(cells, offsets, maxima, scores, ids, beam);
  } else {
    select_all<c10::BFloat16>(cells, offsets, maxima, scores, ids, beam);
  }
  return {scores, ids};
}

}  // namespace tfm
