#include "model/transformer.h"

#include <torch/torch.h>

#include "model/length_chunks.h"
#include "model/linear.h"
#include "model/masks.h"
#include "model/shortlist_logits.h"
#include "runtime/busy_scope.h"
#include "runtime/huge_pages.h"
#include "text/special_ids.h"

namespace tfm {

TransformerImpl::TransformerImpl(const ModelConfig& config) : config_(config) {
  validate(config);
  // §3.4: with a shared vocabulary one matrix serves the source and target embeddings and the
  // pre-softmax projection; it is registered once, here, and the embedding modules only use it.
  torch::nn::Embedding source_tokens{nullptr};
  torch::nn::Embedding target_tokens{nullptr};
  if (config.tie_embeddings) {
    source_tokens = target_tokens =
        register_module("embedding", make_token_embedding(config.vocab_size, config.d_model));
  } else {
    source_tokens = register_module("source_tokens", make_token_embedding(config.vocab_size, config.d_model));
    target_tokens = register_module("target_tokens", make_token_embedding(config.vocab_size, config.d_model));
  }
  source_embedding = register_module("source_embedding", TokenAndPosition(config, source_tokens));
  target_embedding = register_module("target_embedding", TokenAndPosition(config, target_tokens));
  encoder = register_module("encoder", Encoder(config));
  decoder = register_module("decoder", Decoder(config));
  if (!config.tie_embeddings) {
    output_projection =
        register_module("output_projection",
                        torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.vocab_size).bias(false)));
  }
}

const torch::Tensor& TransformerImpl::output_matrix() const {
  return output_projection ? output_projection->weight : target_embedding->tokens->weight;
}

torch::Tensor TransformerImpl::project(const torch::Tensor& hidden) {
  if (output_projection) return output_projection(hidden);
  if (output_matrix_dropped()) return output_.linear(hidden);  // [.., D] -> [.., V]
  // Under bf16 training autocast's matmul, not bf16_training_linear: at 8,000 subwords the
  // [tokens, V] gradient's transpose cost more than the faster product saved (BENCHMARKS.md).
  return torch::matmul(hidden, output_matrix().t());  // [.., D] x [D, V]
}

bool TransformerImpl::output_matrix_dropped() const { return output_matrix().numel() == 0; }

EncoderOutput TransformerImpl::encode(const torch::Tensor& source) {
  const BusyScope busy;  // background work waits (runtime/huge_pages.h)
  EncoderOutput out;
  out.mask = padding_mask(source, kPadId);  // [B, 1, 1, S]
  const RowsComputation encode_rows = [this](const torch::Tensor& tokens, const torch::Tensor& mask) {
    return encoder->forward(source_embedding(tokens), mask);  // [n, L, D]
  };
  // Outside training a sentence's encoding depends on it alone, so sentences of like length are
  // encoded together without the padding the batch's longest gives the rest (a lone sentence, as
  // at batch 1, has none to part).
  const bool parts = !is_training() && source.size(0) > 1;
  const auto chunks = parts ? length_chunks(mask_lengths(out.mask)) : std::vector<LengthChunk>{};
  out.memory = chunks.size() > 1 ? compute_in_length_chunks(source, out.mask, chunks, encode_rows)
                                 : encode_rows(source, out.mask);  // [B, S, D]
  return out;
}

torch::Tensor TransformerImpl::decoder_output(const torch::Tensor& source, const torch::Tensor& target_in) {
  const auto encoded = encode(source);
  return decoder->forward(target_embedding(target_in), encoded.memory, encoded.mask);  // [B, T, D]
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& source, const torch::Tensor& target_in,
                                       AttentionMaps* maps) {
  if (maps == nullptr) return project(decoder_output(source, target_in));
  const auto mask = padding_mask(source, kPadId);                                             // [B, 1, 1, S]
  const auto memory = encoder->forward(source_embedding(source), mask, &maps->encoder_self);  // [B, S, D]
  const auto hidden =
      decoder->forward(target_embedding(target_in), memory, mask, &maps->decoder_self, &maps->cross);  // [B, T, D]
  return project(hidden);
}

DecoderState TransformerImpl::start_decoding(const EncoderOutput& encoded) {
  return decoder->start(encoded.memory, encoded.mask);
}

void TransformerImpl::pack_for_inference(FloatWeights float_weights) {
  pack_linear_layers(*this, float_weights);
  if (!output_.defined() && PackedWeight::supported(output_matrix())) {
    output_ = PreparedWeight(PreparedWeight::Form::kOneDnn, output_matrix());
  }
  // A decoding step of a few sentences streams every prepared weight once: in 2 MiB pages, not
  // 4 KiB ones, the CPU translates their addresses without a page walk per 4 KiB
  // (runtime/huge_pages.h; BENCHMARKS.md).
  std::vector<MemoryRange> weights;
  add_prepared_memory_of_linear_layers(*this, weights);
  output_.add_memory(weights);
  // Not at once: a translation of a few lines is over before the pages would pay for their copy.
  huge_pages_ = std::make_unique<HugePageBacking>(std::move(weights), std::chrono::seconds(2));
}

void TransformerImpl::quantize_int8(FloatWeights float_weights, bool shortlist_rows) {
  quantize_linear_layers_int8(*this, float_weights);
  if (loaded_in_int8_) return;  // its output matrix too came quantized (load_int8_output)
  // One quantization of the output matrix for FBGEMM's products and, kept row by row, for a
  // shortlist's int8 products and a tied model's embeddings (embed_from_output_layer).
  output_ = PreparedWeight(PreparedWeight::Form::kInt8, output_matrix(), {},
                           /*keep_int8_rows=*/shortlist_rows || !output_projection);
  if (shortlist_rows) {
    if (int8_listed_supported(output_matrix().size(1))) output_int8_rows_ = output_.int8_rows();
    // A shortlist estimates what the tokens it leaves out weigh from their rows of the output
    // matrix: the rows this model's products read, its int8 form, not the float matrix.
    hold_output_matrix_as_its_int8_form();
  }
}

void TransformerImpl::hold_output_matrix_as_its_int8_form() {
  const Int8Rows& rows = output_.int8_rows();
  torch::NoGradGuard no_grad;
  const auto matrix = rows.values.to(torch::kFloat32) * rows.scales.unsqueeze(1);  // [V, D]
  // A tied model's embeddings read the same table: the int8 form's rows too, as they read them
  // from the int8 rows once the table is freed (embed_from_output_layer).
  (output_projection ? output_projection->weight : target_embedding->tokens->weight).set_data(matrix);
}

void TransformerImpl::load_int8_output(const Int8Rows& rows) {
  const int64_t dim = output_matrix().size(1);
  TORCH_CHECK(rows.defined() && rows.values.size(0) == config_.vocab_size && rows.values.size(1) == dim,
              "load_int8_output: rows of another shape than the output matrix");
  output_ = PreparedWeight(rows, {}, /*keep_int8_rows=*/true);
  if (int8_listed_supported(dim)) output_int8_rows_ = rows;
  loaded_in_int8_ = true;
  // As IdTranslator's int8 models: bfloat16 keys and values beside int8 products.
  set_cache_dtype(torch::kBFloat16);
  torch::NoGradGuard no_grad;
  if (!embed_from_output_layer()) output_projection->weight.set_data(torch::empty({0, dim}));  // untied
}

void TransformerImpl::restore_output_matrix_from_int8() {
  if (loaded_in_int8_ && output_matrix_dropped()) hold_output_matrix_as_its_int8_form();
}

bool TransformerImpl::embed_from_output_layer() {
  if (output_projection || output_matrix_dropped()) return false;
  const auto rows = output_.blocked_rows();
  const auto& table = output_matrix();  // [V, D]
  // The same elements, or their int8 form where the model decodes in int8.
  const bool same_dtype = rows && (rows->dtype == table.scalar_type() ||
                                   (rows->dtype == torch::kChar && table.scalar_type() == torch::kFloat32));
  if (!same_dtype || rows->rows != table.size(0) || rows->dim != table.size(1)) return false;
  source_embedding->read_tokens_from(*rows);
  target_embedding->read_tokens_from(*rows);
  torch::NoGradGuard no_grad;
  target_embedding->tokens->weight.set_data(torch::empty({0, table.size(1)}, table.options()));
  return true;
}

void TransformerImpl::restrict_output(DecoderState& state, const torch::Tensor& candidates, double rest_correction,
                                      const torch::Tensor& shared_ids) {
  TORCH_CHECK(!output_matrix_dropped(), "restrict_output: the output matrix was freed (embed_from_output_layer)");
  TORCH_CHECK(candidates.dim() == 2 && candidates.size(0) == state.memory_bias.size(0),
              "restrict_output: ", candidates.sizes(), " candidates for ", state.memory_bias.size(0), " sentences");
  auto shared = shared_ids.defined() && shared_candidates_supported(output_matrix())
                    ? output_shared_candidates(shared_ids)
                    : nullptr;
  state.output_columns =
      shortlist_columns(output_matrix(), candidates, output_moments(), rest_correction, std::move(shared));
}

std::shared_ptr<const SharedCandidates> TransformerImpl::output_shared_candidates(const torch::Tensor& ids) {
  const auto& matrix = output_matrix();
  const std::lock_guard<std::mutex> lock(shared_cache_->mutex);
  auto& cache = *shared_cache_;
  const int64_t version = matrix.is_inference() ? 0 : static_cast<int64_t>(matrix._version());
  const bool same_ids = cache.ids.defined() && cache.ids.sizes() == ids.sizes() && torch::equal(cache.ids, ids.cpu());
  if (!cache.shared || cache.data != matrix.data_ptr() || cache.version != version || !same_ids) {
    cache.shared = shared_candidates(matrix, ids);
    cache.ids = ids.cpu().clone();
    cache.data = matrix.data_ptr();
    cache.version = version;
  }
  return cache.shared;
}

RowMoments TransformerImpl::output_moments() {
  TORCH_CHECK(!output_matrix_dropped(), "output_moments: the output matrix was freed (embed_from_output_layer)");
  const auto& matrix = output_matrix();
  const std::lock_guard<std::mutex> lock(moments_cache_->mutex);
  auto& cache = *moments_cache_;
  // In-place updates (training) change the version; inference tensors keep none and are not updated.
  const int64_t version = matrix.is_inference() ? 0 : static_cast<int64_t>(matrix._version());
  if (!cache.moments.sum.defined() || cache.data != matrix.data_ptr() || cache.version != version) {
    cache.moments = row_moments(matrix);
    cache.data = matrix.data_ptr();
    cache.version = version;
  }
  return cache.moments;
}

TransformerImpl::StepLogits TransformerImpl::step_logits(const torch::Tensor& last_tokens, DecoderState& state) {
  return output_logits(step_hidden(last_tokens, state), state);
}

torch::Tensor TransformerImpl::step_hidden(const torch::Tensor& last_tokens, DecoderState& state) {
  const BusyScope busy;
  const auto ids = last_tokens.view({-1, 1});  // [N, 1]
  // Rows that joined a running batch are at positions of their own.
  const auto embedded = state.row_starts.empty()
                            ? target_embedding->forward(ids, state.step)
                            : target_embedding->forward_at(ids, state.next_positions());  // [N, 1, D]
  return decoder->step(embedded, state).squeeze(1);                                       // [N, D]
}

TransformerImpl::StepLogits TransformerImpl::output_logits(const torch::Tensor& hidden, const DecoderState& state) {
  const BusyScope busy;
  if (state.output_columns.defined()) {
    const Int8Rows* int8 = output_int8_rows_.defined() ? &output_int8_rows_ : nullptr;
    auto [listed, rest] = shortlist_logits(hidden, output_matrix(), state.output_columns, state.rows_per_memory, int8);
    return {std::move(listed), std::move(rest)};
  }
  return {output_.defined() ? output_.linear(hidden) : project(hidden), {}};
}

torch::Tensor TransformerImpl::step(const torch::Tensor& last_tokens, DecoderState& state) {
  return log_probs(step_logits(last_tokens, state));
}

torch::Tensor TransformerImpl::log_probs(const StepLogits& step_logits) {
  const auto& [logits, rest] = step_logits;
  if (!rest.defined()) return log_probs(logits);
  return log_probs(torch::cat({logits, rest.unsqueeze(1)}, 1)).narrow(1, 0, logits.size(1)).contiguous();
}

torch::Tensor TransformerImpl::log_probs(const torch::Tensor& step_logits) {
  auto logits = step_logits.to(torch::kFloat32);
  if (!logits.is_cpu() || logits.requires_grad()) return torch::log_softmax(logits, -1);
  // In place (when nothing differentiates through it): the CPU kernel reads each row whole before
  // writing it, so the result is the same bits, and [N, V] floats fewer are live at every step.
  at::_log_softmax_out(logits, logits, -1, /*half_to_float=*/false);
  return logits;
}

}  // namespace tfm
