#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "model/blocked_rows.h"

namespace tfm {

/// Whether embed_rows() can compute tokens[ids] * scale + positions: a CPU table in float32 or
/// bfloat16, contiguous int64 ids, a contiguous position table in float32 or the table's dtype,
/// nothing to differentiate, and fused kernels on (`--plain-kernels` keeps LibTorch's ops).
bool embed_rows_fit(const torch::Tensor& table, const torch::Tensor& ids, const torch::Tensor& positions);

/// Inference's token and position embedding (§3.4, §3.5) in one pass, where LibTorch runs five
/// ops (index_select, a view, mul, a cast and add): at batch 1 a decoding step embeds 4 rows and
/// those ops took as long as a small product.
/// table: [V, D]; ids: [B, T] int64; positions: [P, D]; position_rows: B * T entries, the row of
/// `positions` for each (b, t) in row-major order -> [B, T, D] in table's dtype, each element
/// rounded as LibTorch's mul and then add round it (the position first cast to table's dtype), so
/// the bits are those of `tokens(ids) * scale + positions.to(dtype)`.
/// Throws c10::IndexError on an id outside [0, V), as index_select does.
torch::Tensor embed_rows(const torch::Tensor& table, const torch::Tensor& ids, double scale,
                         const torch::Tensor& positions, const std::vector<int64_t>& position_rows);

/// embed_rows_fit() for rows read where a packed weight holds them.
bool embed_rows_fit(const BlockedRows& table, const torch::Tensor& ids, const torch::Tensor& positions);

/// embed_rows() with the tokens' rows read from `table`'s layout: the same bits as from the
/// [V, D] matrix the layout holds; int8 rows give float32, the bits of embed_rows() over the
/// dequantized matrix (values.to(float32) * scales[:, None]).
torch::Tensor embed_rows(const BlockedRows& table, const torch::Tensor& ids, double scale,
                         const torch::Tensor& positions, const std::vector<int64_t>& position_rows);

}  // namespace tfm
