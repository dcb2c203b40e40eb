#include "app/model_loading.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "model/model_file.h"
#include "runtime/allocator.h"
#include "text/option_names.h"

namespace tfm {

LoadedModels load_models(const std::vector<std::string>& paths, const torch::Device& device, bool need_shortlist) {
  std::vector<Transformer> models;
  std::string tokenizer_proto;
  Shortlist shortlist;
  for (const auto& path : paths) {
    auto loaded = load_model_file(path, device);
    if (models.empty()) {
      tokenizer_proto = loaded.tokenizer_proto;
      shortlist = std::move(loaded.shortlist);
      if (need_shortlist && shortlist.empty()) {
        throw std::invalid_argument(path + ": --shortlist, but the model file has no shortlist (add one with " +
                                    "`tfm shortlist --model " + path + " --train-src ... --train-tgt ... --out ...`)");
      }
    } else if (loaded.tokenizer_proto != tokenizer_proto) {
      throw std::invalid_argument(path + ": its tokenizer differs from " + paths.front() +
                                  "'s; ensemble members must share one vocabulary");
    }
    loaded.model->eval();  // loaded to translate: never trained here
    models.push_back(loaded.model);
  }
  return {std::move(models), Tokenizer::from_serialized(tokenizer_proto, paths.front()), std::move(shortlist)};
}

Translator open_translator(const std::vector<std::string>& paths, const DecodingOptions& decoding,
                           const RuntimeOptions& runtime) {
  TranslatorOptions options = decoding.translator;
  if (decoding.quantize != "none" && decoding.quantize != "int8") {
    throw std::invalid_argument("--quantize " + decoding.quantize + ": expected none or int8");
  }
  options.quantize_int8 = decoding.quantize == "int8";
  parse_sampling(decoding.sampling, options.search.sampling);
  const torch::Device resolved = resolve(runtime);
  torch::Device device = decoding_device(runtime, resolved, options.quantize_int8);
  // int8 computes from float32 weights: with --quantize int8, auto means float32.
  const std::string dtype = options.quantize_int8 && decoding.dtype == "auto" ? "float32" : decoding.dtype;
  PrecisionChoice precision = choose_precision(dtype, device, probe_precision_support());
  options.precision = precision.precision;
  validate(options);
  // Whether a file holds int8 weights is known once it is read: where an int8 file would decode
  // elsewhere than `device` (--device auto found CUDA), the files are read on the CPU and float
  // ones moved after.
  const bool placed_after_reading = decoding_device(runtime, device, /*int8=*/true) != device;
  auto loaded = load_models(paths, placed_after_reading ? torch::Device(torch::kCPU) : device, decoding.shortlist);
  const auto int8_file = std::find_if(loaded.models.begin(), loaded.models.end(),
                                      [](const Transformer& model) { return model->loaded_in_int8(); });
  if (placed_after_reading) {
    device = decoding_device(runtime, resolved, int8_file != loaded.models.end());
    for (auto& model : loaded.models) model->to(device);
    if (device.is_cpu()) spdlog::info("device: cpu, where an int8 model file decodes ({} is usable)", resolved.str());
  }
  if (int8_file != loaded.models.end() && !options.quantize_int8) {
    // An int8 model file decodes in int8, as if --quantize int8 had been given.
    const auto& path = paths[static_cast<size_t>(int8_file - loaded.models.begin())];
    if (decoding.dtype != "auto" && decoding.dtype != "float32") {
      throw std::invalid_argument(path + ": an int8 model file decodes with " + option_name("dtype") +
                                  " float32 (or auto), not " + decoding.dtype);
    }
    options.quantize_int8 = true;
    precision = choose_precision("float32", device, probe_precision_support());
    options.precision = precision.precision;
    validate(options);
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    const ModelConfig& config = loaded.models[i]->config();
    spdlog::info("loaded {} ({} layers, d_model {}{})", paths[i], config.encoder_layers, config.d_model,
                 loaded.models[i]->loaded_in_int8() ? ", int8 model file" : "");
  }
  if (decoding.shortlist) {
    spdlog::info(
        "shortlist: {} frequent subwords, {} candidates in all, left-out probability corrected by {:+.4f} nats",
        loaded.shortlist.frequent().size(), loaded.shortlist.entries(), loaded.shortlist.rest_correction());
  }
  // Logged once the flags and files are known good, so a usage or file error stays one line.
  spdlog::info("precision: {}{}", precision.reason, options.quantize_int8 ? ", int8 linear layers" : "");
  if (!precision.warning.empty()) spdlog::warn("{}", precision.warning);
  const auto& search = options.search;
  const auto& sampling = search.sampling;
  const std::string strategy =
      sampling.enabled
          ? fmt::format("sampling {}, temperature {:g}, seed {}",
                        sampling.top_k > 0 ? fmt::format("among the top {}", sampling.top_k)
                                           : fmt::format("within the top {:g} of the mass", sampling.top_p),
                        sampling.temperature, sampling.seed)
      : search.beam == 1 ? std::string("greedy")
                         : fmt::format("beam {}", search.beam);
  spdlog::info("search: {}, length penalty {:g}, max length {:g} * source + {}", strategy, search.length_penalty,
               search.max_len_a, search.max_len_b);
  Translator translator(std::move(loaded.models), std::move(loaded.tokenizer), options, device,
                        decoding.shortlist ? std::move(loaded.shortlist) : Shortlist());
  if (const int64_t workers = translator.ids().batch_workers(); workers > 1) {
    spdlog::info("batches: up to {} side by side, each of up to {} source subwords", workers,
                 std::max<int64_t>(1, options.max_tokens / workers));
  }
  // Loading freed what decoding never needs (a training checkpoint's optimizer state, the weights
  // before conversion or quantization): hand it back rather than keep it for the whole run.
  release_free_memory();
  return translator;
}

}  // namespace tfm
