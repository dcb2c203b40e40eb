#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "model/attention_maps.h"
#include "model/transformer.h"

namespace tfm {

/// One sentence pair's attention weights, as `model` computes them in a teacher-forced forward
/// pass over the decoded hypothesis: the same weights incremental decoding used (tested:
/// incremental == full forward), now kept for pictures and word alignment. source_ids and
/// hypothesis_ids come without </s>; the source gets its </s> and the target input its <s>.
/// One float32 CPU tensor per layer, the batch dimension dropped: encoder_self [H, S, S],
/// decoder_self [H, T, T], cross [H, T, S] (S and T counting </s> and <s>).
AttentionMaps probe_attention(Transformer& model, const std::vector<int64_t>& source_ids,
                              const std::vector<int64_t>& hypothesis_ids, const torch::Device& device);

/// A layer index as `--alignment-layer` takes it: 0-based, negative counts from the end (-1 the
/// last layer, -2 the last but one); clamped into the model, so -2 of a one-layer model is 0.
int64_t resolve_layer(int64_t layer, int64_t layers);

/// [hypothesis subwords, source subwords]: the cross-attention of `layer` averaged over heads,
/// rows for the hypothesis subwords (not </s>), columns for the source subwords (not </s>).
torch::Tensor soft_alignment(const AttentionMaps& maps, int64_t layer);

/// For each hypothesis subword, the source subword it attends to most in soft_alignment (the
/// alignment fairseq's --print-alignment and Marian's --alignment hard print); -1 for an empty source.
std::vector<int64_t> hard_alignment(const AttentionMaps& maps, int64_t layer);

/// Word alignment in the Pharaoh format Marian and fairseq print: "source-target" pairs of
/// subword positions, 0-based ("0-0 1-2 2-1").
std::string pharaoh_alignment(const std::vector<int64_t>& links);

}  // namespace tfm
