#include "model/shortlist_shared.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/bf16_block_amx.h"
#include "runtime/step_team.h"

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kTileInputs = 32;  // multiply_bf16_block_amx's inputs: a multiple of these

/// rows [V, D] bfloat16 -> the rows of `ids` ([F], ascending) in blocks of kSharedBlock, each
/// [D / 2, kSharedBlock, 2] elements (SmallRowsProduct's bfloat16 layout), zeros past F.
torch::Tensor lay_out_blocks(const torch::Tensor& rows, const torch::Tensor& ids) {
  const int64_t count = ids.numel(), dim = rows.size(1);
  const int64_t blocks = (count + kSharedBlock - 1) / kSharedBlock;
  auto out = torch::zeros({blocks * kSharedBlock * dim}, torch::kBFloat16);
  const auto* from = rows.data_ptr<c10::BFloat16>();
  auto* to = out.data_ptr<c10::BFloat16>();
  const int64_t* id = ids.data_ptr<int64_t>();
  for (int64_t f = 0; f < count; ++f) {
    c10::BFloat16* block = to + f / kSharedBlock * kSharedBlock * dim;
    const int64_t o = f % kSharedBlock;
    const c10::BFloat16* row = from + id[f] * dim;
    for (int64_t i = 0; i < dim; i += 2) {
      block[i * kSharedBlock + 2 * o] = row[i];
      block[i * kSharedBlock + 2 * o + 1] = row[i + 1];
    }
  }
  return out;
}

/// Rows [first, first + kTileRows) (fewer at the end: the tiles set for as many) by blocks
/// [block_begin, block_end) of the shared candidates; then each row's columns whose candidates lie
/// in those blocks (and, with the first blocks, its padding columns) set. `sums`: this thread's
/// [blocks, kTileRows, kSharedBlock] buffer.
void score_unit(const SharedScores& a, int64_t first, int64_t block_begin, int64_t block_end,
                std::vector<float>& sums) {
  const SharedCandidates& shared = *a.shared;
  const int64_t dim = shared.dim, rows = std::min(kTileRows, a.rows - first);
  sums.resize(static_cast<size_t>(shared.block_count() * kTileRows * kSharedBlock));
  const auto* blocks = shared.blocks.data_ptr<c10::BFloat16>();
  {
    // A beam's 4 rows take a quarter of a full tile's multiply-adds: each output is summed alone,
    // in the same order whatever the rows the tiles are set for.
    const Bf16Tiles tiles(rows);
    for (int64_t b = block_begin; b < block_end; ++b) {
      multiply_bf16_block_amx(blocks + b * kSharedBlock * dim, a.hidden + first * dim, dim, 1, rows,
                              sums.data() + b * kTileRows * kSharedBlock);
    }
  }
  const int64_t place_begin = block_begin * kSharedBlock, place_end = block_end * kSharedBlock;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = first + r, list = row / a.rows_per_list;
    const int64_t* columns = a.columns + list * a.shared_width;
    const int64_t* places = a.places + list * a.shared_width;
    float* out = a.listed + row * a.width;
    for (int64_t e = 0; e < a.shared_width && columns[e] >= 0; ++e) {
      const int64_t place = places[e];
      if (place < 0) {
        if (block_begin == 0) out[columns[e]] = kNegInf;
      } else if (place >= place_begin && place < place_end) {
        out[columns[e]] = sums[(place / kSharedBlock * kTileRows + r) * kSharedBlock + place % kSharedBlock];
      }
    }
  }
}

}  // namespace

int64_t SharedCandidates::block_count() const { return (count() + kSharedBlock - 1) / kSharedBlock; }

bool shared_candidates_supported(const torch::Tensor& matrix) {
  return matrix.dim() == 2 && matrix.is_cpu() && matrix.scalar_type() == torch::kBFloat16 &&
         matrix.size(1) % kTileInputs == 0 && bf16_block_amx_kernels();
}

std::shared_ptr<const SharedCandidates> shared_candidates(const torch::Tensor& matrix, const torch::Tensor& ids) {
  TORCH_CHECK(shared_candidates_supported(matrix), "shared_candidates: a bfloat16 CPU matrix [V, D], D a multiple of ",
              kTileInputs, ", on a CPU with AMX-BF16");
  torch::NoGradGuard no_grad;
  const int64_t vocab = matrix.size(0);
  const auto sorted = std::get<0>(ids.to(torch::kCPU, torch::kLong).flatten().sort());
  TORCH_CHECK(sorted.numel() == 0 || (sorted[0].item<int64_t>() >= 0 && sorted[-1].item<int64_t>() < vocab),
              "shared_candidates: ids outside a vocabulary of ", vocab);
  TORCH_CHECK(sorted.numel() < 2 || sorted.slice(0, 1).ne(sorted.slice(0, 0, -1)).all().item<bool>(),
              "shared_candidates: repeated ids");
  auto out = std::make_shared<SharedCandidates>();
  out->ids = sorted;
  out->places = torch::full({vocab}, -1, torch::kLong);
  out->places.index_copy_(0, sorted, torch::arange(sorted.numel(), torch::kLong));
  out->dim = matrix.size(1);
  out->blocks = lay_out_blocks(matrix.detach().contiguous(), sorted);
  return out;
}

void score_shared_candidates(const SharedScores& a) {
  const int64_t groups = (a.rows + kTileRows - 1) / kTileRows, blocks = a.shared->block_count();
  if (groups == 0) return;
  // Few rows: their groups split by blocks as well, so that every thread has a share and reads
  // only its blocks' rows (at a beam's 4 rows a step reads the 1 MiB of blocks once, not per thread).
  const int64_t threads = at::get_num_threads();
  const int64_t chunks = std::clamp<int64_t>(threads / groups, 1, std::max<int64_t>(1, blocks));
  const auto* data = a.shared->blocks.data_ptr<c10::BFloat16>();
  const MemoryRange reads{data, static_cast<int64_t>(a.shared->blocks.nbytes())};
  team_parallel_for(
      0, groups * chunks, 1,
      [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> sums;
        for (int64_t unit = begin; unit < end; ++unit) {
          const int64_t group = unit / chunks, chunk = unit % chunks;
          score_unit(a, group * kTileRows, chunk * blocks / chunks, (chunk + 1) * blocks / chunks, sums);
        }
      },
      reads);
}

}  // namespace tfm
