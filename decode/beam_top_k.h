#pragma once
#include <cstdint>
#include <utility>

#include <torch/types.h>

namespace tfm {

/// Beam search's candidate selection, fused: for each sentence a (rows a*K .. a*K+K-1 of
/// `log_probs`), the `count` best of beam_scores[r] + log_probs[r][c] over its K x V' cells, best
/// first, as flat ids r_in_block * V' + c. Equal to
///   (beam_scores.unsqueeze(1) + log_probs).view({A, K * V'}).topk(count)
/// with ties taken in id order, but without writing the [N, V'] sums out: on the CPU one pass
/// over log_probs with a small sorted list per sentence (elsewhere LibTorch's topk).
/// log_probs: [A*K, V'] float32 or bfloat16 (read as float32), beam_scores: [A*K] float32 -> scores [A, count] float32
/// and ids [A, count] int64, on the CPU. Slots past the finite candidates hold -inf.
/// block_maxima (optional, CPU only): [A*K, ceil(V' / kLogitBlock)], for each block of kLogitBlock
/// cells of a row a value no cell of it exceeds (LogNormalizers::block_maxima of the logits, if
/// nothing raised a cell since): blocks that cannot enter the top are skipped unread.
std::pair<torch::Tensor, torch::Tensor> beam_top_k(const torch::Tensor& log_probs, const torch::Tensor& beam_scores,
                                                   int64_t beam, int64_t count, const torch::Tensor& block_maxima = {});

}  // namespace tfm
