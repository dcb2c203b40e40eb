#include "data/batch_split.h"

#include <algorithm>
#include <stdexcept>

#include <torch/torch.h>

#include "text/special_ids.h"

namespace tfm {
namespace {

/// rows [B', L] trimmed to the positions before the first column that is padding in every row.
torch::Tensor trim_padding(const torch::Tensor& rows) {
  const int64_t longest = rows.ne(kPadId).sum(1).max().item<int64_t>();
  return rows.narrow(1, 0, longest).contiguous();
}

int64_t real_tokens(const torch::Tensor& rows) { return rows.ne(kPadId).sum().item<int64_t>(); }

}  // namespace

std::vector<Batch> split_batch(const Batch& batch, int64_t parts) {
  if (parts < 1) throw std::invalid_argument("split_batch: parts must be >= 1");
  const int64_t rows = batch.source.size(0);
  parts = std::min(parts, rows);
  if (parts <= 1) return {batch};
  std::vector<Batch> split(parts);
  for (int64_t p = 0; p < parts; ++p) {
    const auto index = torch::arange(p, rows, parts, torch::TensorOptions(torch::kLong).device(batch.source.device()));
    Batch& part = split[p];
    // Right-padded rows: a row's tokens are its non-pad positions, so the longest row's count is
    // the width the part needs.
    part.source = trim_padding(batch.source.index_select(0, index));
    part.target_out = trim_padding(batch.target_out.index_select(0, index));
    part.target_in = batch.target_in.index_select(0, index).narrow(1, 0, part.target_out.size(1)).contiguous();
    part.source_tokens = real_tokens(part.source);
    part.target_tokens = real_tokens(part.target_out);
    for (int64_t i = p; i < rows && i < static_cast<int64_t>(batch.indices.size()); i += parts) {
      part.indices.push_back(batch.indices[i]);
    }
  }
  return split;
}

}  // namespace tfm
