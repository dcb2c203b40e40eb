#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

namespace tfm {

/// Rows of a padded batch that are computed together, padded to the longest of them.
struct LengthChunk {
  std::vector<int64_t> rows;  // indices into the batch, longest first
  int64_t longest = 0;        // the longest row's length (at least 1): the chunk's padded width
};

/// What computing one more chunk costs, in padded tokens: a pass of kernel calls, and in file mode
/// oneDNN's kernels built for its new row counts. With a smaller value, the small model's
/// many-chunk batches ran slower (BENCHMARKS.md).
constexpr int64_t kChunkCostTokens = 256;

/// The rows of a batch with these lengths in chunks that cost the least: rows x longest padded
/// tokens per chunk plus chunk_cost each. Rows are sorted longest first (ties in batch order), and
/// a chunk is a run of them. Every row lies in exactly one chunk; a single chunk means that
/// parting the batch saves nothing. lengths: [B] real tokens per row.
std::vector<LengthChunk> length_chunks(const std::vector<int64_t>& lengths, int64_t chunk_cost = kChunkCostTokens);

/// The row lengths of a padding mask [B, 1, 1, S] (true for real tokens).
std::vector<int64_t> mask_lengths(const torch::Tensor& mask);

/// Computes rows of a padded batch: tokens [n, L], mask [n, 1, 1, L] -> [n, L, D].
using RowsComputation = std::function<torch::Tensor(const torch::Tensor& tokens, const torch::Tensor& mask)>;

/// `compute` over a padded batch one chunk at a time, each chunk trimmed to its longest row, the
/// results put back in batch order: what `compute` gives for the whole batch at its real tokens,
/// when a row's result depends on that row alone (inference: no dropout, no batch statistics).
/// tokens: [B, S], pad-filled after each row's length; mask: [B, 1, 1, S], true for real tokens
/// -> [B, S, D]; at padded positions whatever `compute` gave there in the chunk, or zeros past it
/// (a mask hides them, as it hides the padding's results of the whole batch).
torch::Tensor compute_in_length_chunks(const torch::Tensor& tokens, const torch::Tensor& mask,
                                       const std::vector<LengthChunk>& chunks, const RowsComputation& compute);

}  // namespace tfm
