#pragma once
#include <optional>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/attention.h"
#include "model/decoder_state.h"
#include "model/feed_forward.h"
#include "model/model_config.h"

namespace tfm {

/// §3.1: one decoder layer: masked self-attention, encoder-decoder attention, feed-forward.
class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& config);
  /// Teacher forcing. x: [B, T, D], memory: [B, S, D], self_mask: broadcastable to [B, H, T, T],
  /// memory_mask: [B, 1, 1, S] -> [B, T, D]
  /// With `self_weights` / `cross_weights`, the attention weights ([B, H, T, T], [B, H, T, S]) are stored there.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& self_mask,
                        const torch::Tensor& memory_mask, torch::Tensor* self_weights = nullptr,
                        torch::Tensor* cross_weights = nullptr);
  /// One incremental step. x: [N, 1, D] at position `step`; appends this position's keys and
  /// values to `cache` -> [N, 1, D]. Row r reads encoder output r / rows_per_memory
  /// (memory_bias: [N / rows_per_memory, 1, 1, S], additive: DecoderState::memory_bias;
  /// cache.memory_k/v: its rows, or the stored rows memory_slots says). row_starts: null, or N
  /// cache positions where each row's sentence began (DecoderState::row_starts): its
  /// self-attention reads no earlier position.
  /// slots: null, or the cache rows each row reads by position (DecoderState::cache_slots).
  /// memory_slots: null, or the stored memory row each memory row reads (DecoderState::memory_slots).
  torch::Tensor step(const torch::Tensor& x, LayerCache& cache, const torch::Tensor& memory_bias, int64_t step,
                     int64_t rows_per_memory = 1, const std::vector<int64_t>* row_starts = nullptr,
                     const CacheSlots* slots = nullptr, const CacheSlots* memory_slots = nullptr);

  MultiHeadAttention self_attention{nullptr};
  MultiHeadAttention cross_attention{nullptr};
  FeedForward feed_forward{nullptr};
  torch::nn::LayerNorm self_attention_norm{nullptr};
  torch::nn::LayerNorm cross_attention_norm{nullptr};
  torch::nn::LayerNorm feed_forward_norm{nullptr};

 private:
  ModelConfig config_;
};
TORCH_MODULE(DecoderLayer);

/// §3.1: a stack of N decoder layers (plus a final LayerNorm with pre-norm).
class DecoderImpl : public torch::nn::Module {
 public:
  explicit DecoderImpl(const ModelConfig& config);
  /// x: embedded target prefix [B, T, D], memory: [B, S, D], memory_mask: [B, 1, 1, S] -> [B, T, D];
  /// with `self_weights` / `cross_weights`, each layer's attention weights are appended there.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& memory_mask,
                        std::vector<torch::Tensor>* self_weights = nullptr,
                        std::vector<torch::Tensor>* cross_weights = nullptr);
  /// Projects the encoder output for every layer's cross-attention, once per sentence.
  DecoderState start(const torch::Tensor& memory, const torch::Tensor& memory_mask);
  /// The dtype start()'s states keep attention keys and values in (encoder projections and
  /// self-attention caches); unset: the model's. Decoding reads all of them at every step.
  void set_cache_dtype(std::optional<torch::Dtype> dtype) { cache_dtype_ = dtype; }
  /// x: embedded last token [N, 1, D] -> [N, 1, D]; advances state.step.
  torch::Tensor step(const torch::Tensor& x, DecoderState& state);

  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};  // pre-norm only

 private:
  ModelConfig config_;
  std::optional<torch::Dtype> cache_dtype_;
};
TORCH_MODULE(Decoder);

}  // namespace tfm
