#include "model/decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "model/encoder.h"
#include "model/layer_options.h"
#include "model/masks.h"

namespace tfm {

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& config) : config_(config) {
  self_attention = register_module("self_attention", MultiHeadAttention(self_attention_options(config)));
  cross_attention = register_module("cross_attention", MultiHeadAttention(cross_attention_options(config)));
  feed_forward = register_module("feed_forward", FeedForward(feed_forward_options(config)));
  self_attention_norm = register_module("self_attention_norm", make_layer_norm(config.d_model));
  cross_attention_norm = register_module("cross_attention_norm", make_layer_norm(config.d_model));
  feed_forward_norm = register_module("feed_forward_norm", make_layer_norm(config.d_model));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                        const torch::Tensor& self_mask, const torch::Tensor& memory_mask,
                                        torch::Tensor* self_weights, torch::Tensor* cross_weights) {
  auto h = residual(x, self_attention_norm, config_, is_training(),
                    [&](const torch::Tensor& in) { return self_attention->forward(in, self_mask, self_weights); });
  h = residual(h, cross_attention_norm, config_, is_training(), [&](const torch::Tensor& in) {
    return cross_attention->forward(in, memory, memory_mask, cross_weights);
  });
  return residual(h, feed_forward_norm, config_, is_training(),
                  [&](const torch::Tensor& in) { return feed_forward->forward(in); });
}

torch::Tensor DecoderLayerImpl::step(const torch::Tensor& x, LayerCache& cache, const torch::Tensor& memory_bias,
                                     int64_t step, int64_t rows_per_memory, const std::vector<int64_t>* row_starts,
                                     const CacheSlots* slots, const CacheSlots* memory_slots) {
  auto self_attend = [&](const torch::Tensor& in) {
    auto [q, k, v] = self_attention->project_qkv(in);      // each [N, H, 1, Dh]
    const auto [keys, values] = cache.append(k, v, step);  // each [W, H, step+1, Dh]
    // Earlier positions only exist in the cache, so causality needs no mask; a window starts later.
    const int64_t first = config_.attention_window > 0 ? std::max<int64_t>(0, step - config_.attention_window) : 0;
    return self_attention->attend_cached(q, keys, values, {}, first, row_starts, slots);
  };
  auto h = residual(x, self_attention_norm, config_, is_training(), self_attend);
  h = residual(h, cross_attention_norm, config_, is_training(), [&](const torch::Tensor& in) {
    const auto q = cross_attention->project_q(in);  // [N, H, 1, Dh]
    if (rows_per_memory == 1) {
      return cross_attention->attend_cached(q, cache.memory_k, cache.memory_v, memory_bias, 0, nullptr, memory_slots);
    }
    // The K rows that share an encoder output become K query positions over that one copy:
    // [N, H, 1, Dh] -> [M, H, K, Dh], so memory keys and values are never repeated K times.
    const int64_t rows = q.size(0);
    const auto grouped = q.reshape({rows / rows_per_memory, rows_per_memory, q.size(1), q.size(3)}).transpose(1, 2);
    return cross_attention
        ->attend_cached(grouped, cache.memory_k, cache.memory_v, memory_bias, 0, nullptr, memory_slots)  // [M, K, D]
        .reshape({rows, 1, -1});
  });
  return residual(h, feed_forward_norm, config_, is_training(),
                  [&](const torch::Tensor& in) { return feed_forward->forward(in); });
}

DecoderImpl::DecoderImpl(const ModelConfig& config) : config_(config) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.decoder_layers; ++i) layers->push_back(DecoderLayer(config));
  if (config.norm == NormPlacement::kPre) final_norm = register_module("final_norm", make_layer_norm(config.d_model));
}

torch::Tensor DecoderImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                   const torch::Tensor& memory_mask, std::vector<torch::Tensor>* self_weights,
                                   std::vector<torch::Tensor>* cross_weights) {
  const int64_t length = x.size(1);
  auto self_mask = causal_mask(length, x.device());  // [1, 1, T, T]
  if (config_.attention_window > 0) {
    self_mask = self_mask & window_mask(length, length, config_.attention_window, 0, x.device());
  }
  auto h = x;
  for (const auto& layer : *layers) {
    torch::Tensor self_w, cross_w;
    h = layer->as<DecoderLayer>()->forward(h, memory, self_mask, memory_mask,
                                           self_weights != nullptr ? &self_w : nullptr,
                                           cross_weights != nullptr ? &cross_w : nullptr);
    if (self_weights != nullptr) self_weights->push_back(self_w);
    if (cross_weights != nullptr) cross_weights->push_back(cross_w);
  }
  return final_norm ? layer_norm_rows(final_norm, h) : h;
}

DecoderState DecoderImpl::start(const torch::Tensor& memory, const torch::Tensor& memory_mask) {
  DecoderState state;
  state.memory_bias = torch::zeros(memory_mask.sizes(), memory.options())
                          .masked_fill(memory_mask.logical_not(), -std::numeric_limits<float>::infinity());
  for (const auto& layer : *layers) {
    LayerCache cache;
    cache.stored_dtype = cache_dtype_;
    const auto [k, v] = layer->as<DecoderLayer>()->cross_attention->project_kv(memory);  // strided head views
    // Contiguous once here: every step's matmul would otherwise copy the strided views.
    const auto stored = k.options().dtype(cache_dtype_.value_or(k.scalar_type()));
    cache.memory_k = k.to(stored, /*non_blocking=*/false, /*copy=*/false, torch::MemoryFormat::Contiguous);
    cache.memory_v = v.to(stored, /*non_blocking=*/false, /*copy=*/false, torch::MemoryFormat::Contiguous);
    state.layers.push_back(std::move(cache));
  }
  return state;
}

torch::Tensor DecoderImpl::step(const torch::Tensor& x, DecoderState& state) {
  auto h = x;
  const auto* row_starts = state.row_starts.empty() ? nullptr : &state.row_starts;
  state.make_room_for_step();
  state.cache_slots.write(x.size(0), state.step);
  const auto* slots = state.cache_slots.identity() ? nullptr : &state.cache_slots;
  const auto* memory_slots = state.memory_slots.identity() ? nullptr : &state.memory_slots;
  for (size_t i = 0; i < layers->size(); ++i) {
    h = layers->ptr<DecoderLayerImpl>(i)->step(h, state.layers[i], state.memory_bias, state.step, state.rows_per_memory,
                                               row_starts, slots, memory_slots);
  }
  ++state.step;
  return final_norm ? layer_norm_rows(final_norm, h) : h;
}

}  // namespace tfm
