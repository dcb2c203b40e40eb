#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "model/attention_maps.h"
#include "model/decoder.h"
#include "model/decoder_state.h"
#include "model/embeddings.h"
#include "model/encoder.h"
#include "model/linear.h"
#include "model/model_config.h"
#include "model/prepared_weight.h"
#include "model/shortlist_int8.h"
#include "model/shortlist_shared.h"
#include "runtime/huge_pages.h"

namespace tfm {

/// The encoder's result for a batch of source sentences.
struct EncoderOutput {
  torch::Tensor memory;  // [B, S, D]
  torch::Tensor mask;    // [B, 1, 1, S]: true for real tokens
};

/// §3: the encoder-decoder Transformer. Sequences are token ids with tfm's special ids;
/// the decoder input starts with bos, targets end with eos, and pad fills the rest.
class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelConfig& config);

  /// Teacher forcing. source: [B, S], target_in: [B, T] -> logits [B, T, V]. With `maps`, every
  /// layer's attention weights are stored there (the explicit attention path, even on CUDA).
  torch::Tensor forward(const torch::Tensor& source, const torch::Tensor& target_in, AttentionMaps* maps = nullptr);
  /// forward() without the output projection: source [B, S], target_in [B, T] -> decoder output [B, T, D].
  torch::Tensor decoder_output(const torch::Tensor& source, const torch::Tensor& target_in);

  // The incremental decoding interface beam search uses: encode once, then one step per token.
  /// source: [B, S] -> memory [B, S, D] and its mask
  EncoderOutput encode(const torch::Tensor& source);
  /// Caches every layer's cross-attention keys and values for `encoded`.
  DecoderState start_decoding(const EncoderOutput& encoded);
  /// From now on step() scores each sentence only over its own `candidates` (a shortlist's:
  /// [B, C] int64, one sorted list per sentence of the state, -1 as padding; see
  /// Shortlist::candidates), with the output matrix as it was stored (model/shortlist_logits.h),
  /// the left-out tokens' estimate corrected by `rest_correction` nats (Shortlist::rest_correction).
  /// `shared_ids` ([F] int64, Shortlist::shared_targets): where the CPU scores shared candidates on
  /// tiles (model/shortlist_shared.h), those of every list; their rows laid out once per matrix
  /// and set of ids. Undefined: every list's candidates one list at a time.
  void restrict_output(DecoderState& state, const torch::Tensor& candidates, double rest_correction = 0,
                       const torch::Tensor& shared_ids = {});
  /// What restrict_output() needs of the output matrix alone (its rows' moments: a covariance and
  /// its eigenvectors, ~25 ms at 8,000 x 256) computed now, with the weights' preparation, instead
  /// of in the first restricted batch.
  void prepare_restricted_output() { output_moments(); }
  /// row_moments(output_matrix()), computed once per matrix.
  RowMoments output_moments();
  /// last_tokens: [N] (bos at the first step) -> next-token log-probabilities [N, V] (float32);
  /// [N, C] over each row's candidates after restrict_output (padding columns -inf), normalized
  /// with the left-out tokens' stand-in (model/shortlist_logits.h).
  torch::Tensor step(const torch::Tensor& last_tokens, DecoderState& state);
  /// step() before its log-softmax: logits [N, V] in the model's dtype (float32 for int8); after
  /// restrict_output, [N, C] float32 and `rest` [N], the stand-in for the tokens each sentence's
  /// list leaves out (model/shortlist_logits.h).
  struct StepLogits {
    torch::Tensor logits;
    torch::Tensor rest;  // undefined without a shortlist
  };
  StepLogits step_logits(const torch::Tensor& last_tokens, DecoderState& state);
  /// step_logits() in two halves: the decoder's step, last_tokens [N] -> its output [N, D] ...
  torch::Tensor step_hidden(const torch::Tensor& last_tokens, DecoderState& state);
  /// ... and the output layer over it. hidden: [N, D], every row of `state` after restrict_output;
  /// without it, any rows (a block of them: each row's logits are its own).
  StepLogits output_logits(const torch::Tensor& hidden, const DecoderState& state);
  /// step()'s log-softmax: logits [N, V'] -> float32 log-probabilities (in place where it may).
  static torch::Tensor log_probs(const torch::Tensor& logits);
  /// step_logits() -> step(): under a shortlist the left-out tokens' stand-in is in the softmax, not
  /// a column of the result ([N, C], contiguous).
  static torch::Tensor log_probs(const StepLogits& step_logits);

  /// decoder output [B, T, D] -> logits [B, T, V] (through the shared embedding matrix when tied, §3.4)
  torch::Tensor project(const torch::Tensor& hidden);

  /// The pre-softmax projection's matrix: [V, D] ([0, D] once embed_from_output_layer() freed it)
  const torch::Tensor& output_matrix() const;
  /// CPU inference in float32 or bfloat16: every linear layer's weight and the output matrix
  /// laid out once for oneDNN (model/packed_weight.h), used by encode() and step(). The weights
  /// must not change afterwards: IdTranslator packs the models it alone holds, or copies.
  /// The packed weights are then backed with 2 MiB pages where Linux can, on a thread of its own
  /// from 2 s on, while decoding goes on (runtime/huge_pages.h). With FloatWeights::kDrop the linear layers'
  /// float weights are freed as they are packed (model/linear.h).
  void pack_for_inference(FloatWeights float_weights = FloatWeights::kKeep);
  /// After pack_for_inference() or quantize_int8(), in a tied model (§3.4) whose output layer's
  /// prepared copy holds the matrix row by row (model/blocked_rows.h: where the small-row products
  /// read it, or its int8 rows): the source and target embeddings read their rows there, and the
  /// [V, D] table is freed, so the model no longer holds the matrix twice. In int8 the embeddings
  /// are then those of the quantized matrix, as the output layer's are. Then neither
  /// restrict_output() (a shortlist reads the table) nor training can follow. Returns whether it
  /// did so.
  bool embed_from_output_layer();
  /// Bytes of the packed weights in 2 MiB pages since pack_for_inference() (none where Linux
  /// cannot), once that work has ended: waits for it.
  HugePageBytes huge_page_bytes() const { return huge_pages_ ? huge_pages_->wait() : HugePageBytes{}; }
  /// CPU inference with int8 weights (float32 model): every linear layer and the output matrix
  /// quantized once, one scale per row (model/int8_weight.h). Call before pack_for_inference(),
  /// which then leaves them as they are. FloatWeights as in pack_for_inference(). The output
  /// matrix's int8 rows are kept beside FBGEMM's packing (1 byte an element) where a tied model's
  /// embeddings may read them (embed_from_output_layer) or, with `shortlist_rows`, a shortlist's
  /// int8 products (restrict_output; where this CPU has no int8 kernel, a shortlist reads the
  /// float rows). With `shortlist_rows` the float output matrix is then the int8 form's (values
  /// times scales), so that a shortlist's estimate of the tokens it leaves out, and a tied
  /// model's embeddings, read the rows the products read: the same as from an int8 model file.
  void quantize_int8(FloatWeights float_weights = FloatWeights::kKeep, bool shortlist_rows = true);
  /// An int8 model file's output matrix, already quantized (values [V, D], scales [V]): the
  /// output layer computes from it as after quantize_int8(), the embeddings of a tied model read
  /// it (embed_from_output_layer), and the float matrix, never loaded, is freed. Call after the
  /// linear layers' LinearImpl::load_int8(); quantize_int8() then changes nothing.
  void load_int8_output(const Int8Rows& rows);
  /// Whether the model came from an int8 model file (load_int8_output): it decodes in int8 on the
  /// CPU only, and cannot be trained, averaged or saved.
  bool loaded_in_int8() const { return loaded_in_int8_; }
  /// For a shortlist (restrict_output) of a model loaded_in_int8(): the float [V, D] matrix its
  /// int8 rows stand for, values times scales (as quantize_int8 holds it for a shortlist), so
  /// that a shortlist can sum its candidates' rows and the moments of all. Does nothing if the
  /// matrix is held.
  void restore_output_matrix_from_int8();
  /// The dtype decoding keeps attention keys and values in (DecoderImpl::set_cache_dtype).
  void set_cache_dtype(std::optional<torch::Dtype> dtype) { decoder->set_cache_dtype(dtype); }
  const ModelConfig& config() const { return config_; }

  TokenAndPosition source_embedding{nullptr};
  TokenAndPosition target_embedding{nullptr};
  Encoder encoder{nullptr};
  Decoder decoder{nullptr};
  torch::nn::Linear output_projection{nullptr};  // untied only: [V, D], no bias

 private:
  bool output_matrix_dropped() const;  // by embed_from_output_layer()
  /// output_matrix() <- the matrix the output layer's int8 rows stand for, values times scales.
  void hold_output_matrix_as_its_int8_form();
  ModelConfig config_;
  PreparedWeight output_;      // output_matrix() for oneDNN or FBGEMM, once prepared for inference
  Int8Rows output_int8_rows_;  // output_matrix() for a shortlist's int8 products, once quantized
  bool loaded_in_int8_ = false;
  struct MomentsCache {
    std::mutex mutex;  // decoding threads may share a model
    const void* data = nullptr;
    int64_t version = -1;
    RowMoments moments;
  };
  std::shared_ptr<MomentsCache> moments_cache_ = std::make_shared<MomentsCache>();
  struct SharedCache {
    std::mutex mutex;
    const void* data = nullptr;  // the output matrix's, its version and the ids they were laid out for
    int64_t version = -1;
    torch::Tensor ids;
    std::shared_ptr<const SharedCandidates> shared;
  };
  std::shared_ptr<SharedCache> shared_cache_ = std::make_shared<SharedCache>();
  /// shared_candidates(output_matrix(), ids), laid out once per matrix and ids.
  std::shared_ptr<const SharedCandidates> output_shared_candidates(const torch::Tensor& ids);
  // Last, so that it is destroyed first: its thread stops before the weights it backs are freed.
  std::unique_ptr<HugePageBacking> huge_pages_;
};
TORCH_MODULE(Transformer);

}  // namespace tfm
