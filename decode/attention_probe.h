#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "model/attention_maps.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

/// One sentence pair's attention weights, as the model computes them in a teacher-forced forward
/// pass over the decoded hypothesis: the same weights incremental decoding used (tested:
/// incremental == full forward), now kept for pictures and word alignment.
struct SentenceAttention {
  std::vector<std::string> source_pieces;   // S: the source subwords, then </s>
  std::vector<std::string> target_inputs;   // T: <s>, then the hypothesis subwords (decoder self-attention keys)
  std::vector<std::string> target_outputs;  // T: the hypothesis subwords, then </s> (what each query row predicts)
  // One float32 CPU tensor per layer, the batch dimension dropped: encoder_self [H, S, S],
  // decoder_self [H, T, T], cross [H, T, S].
  AttentionMaps maps;
};

/// source_ids and hypothesis_ids without </s> (as the Translator records them).
SentenceAttention probe_attention(Transformer& model, const Tokenizer& tokenizer,
                                  const std::vector<int64_t>& source_ids,
                                  const std::vector<int64_t>& hypothesis_ids, const torch::Device& device);

/// A layer index as `--alignment-layer` takes it: 0-based, negative counts from the end (-1 the
/// last layer, -2 the last but one); clamped into the model, so -2 of a one-layer model is 0.
int64_t resolve_layer(int64_t layer, int64_t layers);

/// [hypothesis subwords, source subwords]: the cross-attention of `layer` averaged over heads,
/// rows for the hypothesis subwords (not </s>), columns for the source subwords (not </s>).
torch::Tensor soft_alignment(const SentenceAttention& attention, int64_t layer);

/// For each hypothesis subword, the source subword it attends to most in soft_alignment (the
/// alignment fairseq's --print-alignment and Marian's --alignment hard print); -1 for an empty source.
std::vector<int64_t> hard_alignment(const SentenceAttention& attention, int64_t layer);

}  // namespace tfm
