#pragma once
#include <torch/types.h>

#include "model/transformer.h"

namespace tfm {

/// The model a translator decodes with: its weights converted, quantized or packed once for
/// `device` and `dtype` (model/packed_weight.h, model/int8_weight.h), not at every step.
/// `model` itself when it already has the device and dtype (and nothing is to be quantized or
/// packed); else `model` converted in place when nobody else holds it (a model loaded only to
/// translate: no copy of its weights to allocate and fill), or a converted copy, so that a
/// caller's model is never changed under it. Packed or quantized, and without a `shortlist` (which
/// reads the output matrix as stored), a tied model's embeddings read their rows from the prepared
/// output matrix and its [V, D] table is freed (TransformerImpl::embed_from_output_layer).
/// quantize_int8: --quantize int8 (float32 on the CPU only); shortlist: whether the translator
/// restricts the output layer to a shortlist. std::invalid_argument for an int8 model file asked
/// for another device, dtype or no int8.
Transformer ready_for_inference(const Transformer& model, const torch::Device& device, torch::ScalarType dtype,
                                bool quantize_int8, bool shortlist);

}  // namespace tfm
