#pragma once
#include <vector>

#include <torch/types.h>

namespace tfm {

/// The attention weights of one teacher-forced forward pass, one tensor per layer, filled when
/// a caller passes it to TransformerImpl::forward: what attention pictures and word alignments
/// are drawn from. Rows are queries; masked keys have weight 0; every row with a key sums to 1.
struct AttentionMaps {
  std::vector<torch::Tensor> encoder_self;  // per encoder layer: [B, H, S, S]
  std::vector<torch::Tensor> decoder_self;  // per decoder layer: [B, H, T, T] (0 above the diagonal)
  std::vector<torch::Tensor> cross;         // per decoder layer: [B, H, T, S]
};

}  // namespace tfm
