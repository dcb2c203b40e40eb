#pragma once
#include <cstdint>
#include <memory>

#include <c10/util/BFloat16.h>
#include <torch/types.h>

namespace tfm {

/// The candidates that most of a batch's shortlists hold (Shortlist::shared_targets: the special
/// and frequent ids, then those the most source tokens list), scored for every row of a batch at
/// once on AMX tiles instead of list by list (model/shortlist_logits.h).
///
/// Why: on a CPU with AMX a list's candidates cost their rows' trip to the core, not their
/// multiply-adds: each sentence's 650-1,000 rows of 1 KiB are read per step and serve only its
/// beam's 4 rows (BENCHMARKS.md). Two thirds of a batch's list entries fall among ~1,000 ids; a
/// product of all rows by those ids' rows, laid out once per model, reads each of them once a
/// step for the whole batch, at the tiles' rate. A row's products with them are the same bits in
/// any batch: the set is fixed per model and shortlist, and a tile sums each output alone.
struct SharedCandidates {
  torch::Tensor ids;     // [F] int64, ascending
  torch::Tensor places;  // [V] int64: each token's place in ids, -1 for the others
  /// The output matrix's rows of `ids`, in SmallRowsProduct's bfloat16 layout: blocks of
  /// kSharedBlock rows, each [D / 2, kSharedBlock, 2], zeros past F.
  torch::Tensor blocks;
  int64_t dim = 0;

  int64_t count() const { return ids.numel(); }
  int64_t block_count() const;
};

/// How many ids a model's shared candidates hold (fewer in a smaller vocabulary): enough to hold
/// two thirds of a Multi30k batch's list entries at 32,000 subwords (BENCHMARKS.md).
constexpr int64_t kSharedCandidates = 1024;
/// Rows of the output matrix a block of the layout holds (multiply_bf16_block_amx's outputs).
constexpr int64_t kSharedBlock = 64;

/// Whether a shortlist over `matrix` ([V, D]) scores shared candidates on tiles here: bfloat16 on
/// the CPU, D a multiple of 32, and a CPU with AMX-BF16 (bf16_block_amx_kernels).
bool shared_candidates_supported(const torch::Tensor& matrix);

/// ids: [F] distinct ids of `matrix`'s rows, any order; shared_candidates_supported(matrix).
std::shared_ptr<const SharedCandidates> shared_candidates(const torch::Tensor& matrix, const torch::Tensor& ids);

/// One step's shared candidates, every row against every one of them, scattered to the columns
/// where each row's list holds them. hidden: [N, D] bfloat16; columns, places: [M, Cs] int64, list
/// m's columns (ShortlistColumns::shared_columns) and their places in `shared.ids`, -1 for a column
/// of padding (set to -inf here), then -1 past the list's end; row n reads list n / rows_per_list.
/// listed: [N, C] float32, written at those columns only.
struct SharedScores {
  const c10::BFloat16* hidden;
  const SharedCandidates* shared;
  const int64_t* columns;
  const int64_t* places;
  int64_t shared_width;
  float* listed;
  int64_t width, rows, rows_per_list;
};
void score_shared_candidates(const SharedScores& a);

}  // namespace tfm
