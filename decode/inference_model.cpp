#include "decode/inference_model.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "model/linear.h"
#include "model/parameter_init.h"
#include "runtime/kernels.h"
#include "text/option_names.h"

namespace tfm {
namespace {

/// Whether the weights get oneDNN's layout for decoding on the CPU (model/packed_weight.h): not
/// with --plain-kernels (LibTorch's own ops, one by one). With int8, FBGEMM's int8 weights
/// replace them (TransformerImpl::quantize_int8).
bool packs_weights(const torch::Device& device, torch::ScalarType dtype) {
  return device.is_cpu() && fused_kernels() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16);
}

/// A copy of `model` with its own weights (built without drawing initial values).
Transformer copy_of(const Transformer& model) {
  Transformer copy(nullptr);
  {
    const SkipParameterInit every_parameter_is_copied_next;
    copy = Transformer(model->config());
  }
  torch::NoGradGuard no_grad;
  const auto parameters = model->named_parameters();
  for (auto& item : copy->named_parameters()) item.value().copy_(parameters[item.key()]);
  const auto buffers = model->named_buffers();
  for (auto& item : copy->named_buffers()) item.value().copy_(buffers[item.key()]);
  return copy;
}

}  // namespace

/// `model` itself when it already has the device and dtype (and nothing is to be quantized or
/// packed); else `model` converted in place when nobody else holds it (a model loaded only to
/// translate: no copy of its weights to allocate and fill), or a converted copy, so that a
/// caller's model is never changed under it. Packed or quantized, and without a `shortlist` (which
/// reads the output matrix as stored), a tied model's embeddings read their rows from the prepared
/// output matrix and its [V, D] table is freed (TransformerImpl::embed_from_output_layer).
Transformer ready_for_inference(const Transformer& model, const torch::Device& device, torch::ScalarType dtype,
                                bool quantize_int8, bool shortlist) {
  if (model->loaded_in_int8()) {
    // Prepared as it was read (an int8 model file): only a shortlist asks for more.
    if (!device.is_cpu() || dtype != torch::kFloat32 || !quantize_int8) {
      throw std::invalid_argument("an int8 model file decodes in int8 on the CPU (" + option_name("quantize") +
                                  " int8, " + option_name("dtype") + " float32, " + option_name("device") + " cpu)");
    }
    Transformer shared = model;  // only read, and by a shortlist given back its float matrix
    if (shortlist) shared->restore_output_matrix_from_int8();
    return shared;
  }
  const bool pack = packs_weights(device, dtype);
  bool matches = !quantize_int8 && !pack;
  for (const auto& parameter : model->parameters()) {
    matches = matches && parameter.device() == device && parameter.scalar_type() == dtype;
  }
  if (matches) return model;
  Transformer own = model.ptr().use_count() == 1 ? model : copy_of(model);
  own->to(device, dtype);
  own->eval();  // the translator's own: never trained, and only read while translating
  // It only translates: its prepared layers no longer read their float weights.
  if (quantize_int8) {
    own->quantize_int8(FloatWeights::kDrop, /*shortlist_rows=*/shortlist);
    // Decoding reads every cached key and value at every step, a stream of memory beside the
    // int8 products; bfloat16 halves it and the caches' footprint (any x86 CPU converts it).
    own->set_cache_dtype(torch::kBFloat16);
  }
  if (pack) {
    own->pack_for_inference(FloatWeights::kDrop);
    // A tied output matrix is then held twice, as a table and packed (or quantized); a shortlist
    // reads the table.
    if (!shortlist) own->embed_from_output_layer();
  }
  return own;
}

}  // namespace tfm
