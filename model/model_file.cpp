#include "model/model_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <torch/torch.h>

#include "model/archive_file.h"
#include "model/int8_weight.h"
#include "model/linear.h"
#include "model/parameter_init.h"
#include "runtime/crc32.h"
#include "runtime/parallel_jobs.h"

namespace tfm {
namespace {

constexpr const char* kMagic = "tfm-model";

std::string shape_string(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

/// Every parameter and buffer by its dotted name, e.g. "decoder.layers.0.feed_forward.w1.weight".
std::vector<std::pair<std::string, torch::Tensor>> named_state(Transformer& model) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : model->named_parameters()) state.emplace_back(item.key(), item.value());
  for (const auto& item : model->named_buffers()) state.emplace_back(item.key(), item.value());
  return state;
}

/// The parameter name of the model's output matrix (a tied model's token table).
std::string output_matrix_name(Transformer& model) {
  for (const auto& item : model->named_parameters()) {
    if (item.value().is_same(model->output_matrix())) return item.key();
  }
  throw std::logic_error("the output matrix is not among the model's parameters");
}

/// The names of the weights an int8 model file stores quantized: every linear layer's weight and
/// the output matrix, the matrices --quantize int8 quantizes.
std::set<std::string> int8_weight_names(Transformer& model) {
  std::set<std::string> names{output_matrix_name(model)};
  for (const auto& item : model->named_modules()) {
    if (item.value()->as<LinearImpl>() != nullptr) names.insert(item.key() + ".weight");
  }
  return names;
}

/// The name an int8 weight's row scales are stored under, beside its values.
std::string scale_name(const std::string& weight_name) { return weight_name + ".scale"; }

torch::Tensor bytes_to_tensor(const std::string& bytes) {
  auto tensor = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

/// Throws std::runtime_error naming `what` unless `tensor`'s storage holds every element its shape
/// claims: a damaged archive can pair a shape with a smaller storage, or with none (a null data
/// pointer, which reading would dereference).
void check_storage(const torch::Tensor& tensor, const std::string& what) {
  if (tensor.numel() == 0) return;
  const bool held = tensor.has_storage() && tensor.data_ptr() != nullptr &&
                    tensor.storage().nbytes() >=
                        static_cast<size_t>((tensor.storage_offset() + tensor.numel()) * tensor.element_size());
  if (!held) throw std::runtime_error(what + " is damaged (its storage is smaller than its shape)");
}

std::string tensor_to_bytes(const torch::Tensor& tensor, const std::string& what) {
  check_storage(tensor, what);
  const auto cpu = tensor.to(torch::kCPU).contiguous();
  if (cpu.numel() == 0) return {};
  return std::string(static_cast<const char*>(cpu.data_ptr()), static_cast<size_t>(cpu.numel()));
}

/// CRC-32 of a tensor's bytes, stored per tensor in model files. The zip records' own CRC-32s
/// (model/zip_checksums.h) catch the same damage earlier; this one still covers files whose
/// writer left those out (torch.serialization.set_crc32_options(False)).
uint32_t tensor_crc32(const torch::Tensor& tensor) {
  const auto cpu = tensor.detach().to(torch::kCPU).contiguous();
  return crc32_of(0, cpu.data_ptr(), static_cast<size_t>(cpu.numel()) * cpu.element_size());
}

c10::IValue read_value(torch::serialize::InputArchive& archive, const std::string& key, const std::string& origin) {
  c10::IValue value;
  if (!archive.try_read(key, value)) throw std::runtime_error(origin + ": not a tfm model file (no '" + key + "')");
  return value;
}

// Typed reads: a damaged or foreign file can hold any value under our keys, and LibTorch's
// toStringRef()/toInt() would throw an internal assertion for the wrong type.
std::string read_string(torch::serialize::InputArchive& archive, const std::string& key, const std::string& origin) {
  const c10::IValue value = read_value(archive, key, origin);
  if (!value.isString()) throw std::runtime_error(origin + ": not a tfm model file ('" + key + "' is not text)");
  return value.toStringRef();
}

int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key, const std::string& origin) {
  const c10::IValue value = read_value(archive, key, origin);
  if (!value.isInt()) throw std::runtime_error(origin + ": not a tfm model file ('" + key + "' is not a number)");
  return value.toInt();
}

/// A lower bound on the parameters `config` implies (embedding plus the attention and
/// feed-forward matrices of every layer), so that a damaged config is an error before it asks
/// for terabytes: the weights of a real file are all in that file.
double minimum_parameters(const ModelConfig& c) {
  const double d = static_cast<double>(c.d_model);
  const double per_layer = 4.0 * d * d + 2.0 * d * static_cast<double>(c.d_ff);
  return static_cast<double>(c.vocab_size) * d + per_layer * static_cast<double>(c.encoder_layers + c.decoder_layers);
}

void check_config_fits(const ModelConfig& config, const std::string& origin, uint64_t file_bytes,
                       double bytes_per_parameter) {
  try {
    validate(config);
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(origin + ": damaged model config (" + error.what() + ")");
  }
  // The narrowest dtype a model file can hold: 2 bytes (bf16/fp16), 1 in an int8 model file.
  if (bytes_per_parameter * minimum_parameters(config) > static_cast<double>(file_bytes)) {
    throw std::runtime_error(origin + ": damaged model config (it describes a model larger than the " +
                             std::to_string(file_bytes) + "-byte file)");
  }
}

/// tensor <- stored. A stored tensor of the same dtype that alone fills its storage becomes the
/// parameter's data outright: the file's bytes, already read into memory, are not copied again
/// (a second copy of every weight to allocate and fill). `adopted` holds the storages taken so
/// far, so that no two parameters ever share one (a file may store two names over one storage).
void adopt_or_copy(torch::Tensor& tensor, const torch::Tensor& stored, std::set<const void*>& adopted) {
  const bool alone = stored.is_contiguous() && stored.storage_offset() == 0 &&
                     stored.storage().nbytes() == stored.nbytes() && adopted.count(stored.data_ptr()) == 0;
  if (alone && stored.scalar_type() == tensor.scalar_type() && stored.device() == tensor.device()) {
    tensor.set_data(stored);
    adopted.insert(stored.data_ptr());
  } else {
    tensor.copy_(stored);
  }
}

/// Throws unless `stored` matches its checksum in `checksums` (null: a file from before checksums).
void check_checksum(const nlohmann::json& checksums, const std::string& name, const torch::Tensor& stored,
                    const std::string& origin) {
  // Files written before checksums existed have none; every file written since has one per tensor.
  if (!checksums.is_null() && (!checksums.contains(name) || !checksums[name].is_number_integer() ||
                               checksums[name].get<int64_t>() != static_cast<int64_t>(tensor_crc32(stored)))) {
    throw std::runtime_error(origin + ": tensor " + name + " is damaged (its checksum does not match; the file " +
                             "was changed or corrupted after it was written)");
  }
}

/// Reads tensor `name` of `weights` (std::runtime_error naming it where it is missing or its
/// storage is short).
torch::Tensor read_tensor(torch::serialize::InputArchive& weights, const std::string& name, const std::string& origin) {
  torch::Tensor stored;
  if (!weights.try_read(name, stored)) {
    throw std::runtime_error(origin + ": missing tensor " + name + " (the file does not match its own config)");
  }
  check_storage(stored, origin + ": tensor " + name);
  return stored;
}

/// An int8 model file's weight `name` of `shape` [out, in]: int8 values within [-127, 127] and
/// positive finite float32 scales [out].
Int8Rows read_int8_weight(torch::serialize::InputArchive& weights, const nlohmann::json& checksums,
                          const std::string& name, at::IntArrayRef shape, const std::string& origin) {
  const auto values = read_tensor(weights, name, origin);
  const auto scales = read_tensor(weights, scale_name(name), origin);
  if (values.scalar_type() != torch::kInt8 || values.sizes() != shape) {
    throw std::runtime_error(origin + ": tensor " + name + " should be int8 of shape " + shape_string(shape) +
                             " in an int8 model file, not " + std::string(c10::toString(values.scalar_type())) + " " +
                             shape_string(values.sizes()));
  }
  if (scales.scalar_type() != torch::kFloat32 || scales.dim() != 1 || scales.size(0) != shape[0]) {
    throw std::runtime_error(origin + ": tensor " + scale_name(name) + " should be float32 of shape [" +
                             std::to_string(shape[0]) + "]");
  }
  check_checksum(checksums, name, values, origin);
  check_checksum(checksums, scale_name(name), scales, origin);
  const auto contiguous_values = values.contiguous();
  const auto contiguous_scales = scales.contiguous();
  if (contiguous_values.numel() > 0 && contiguous_values.min().item<int>() < -127) {
    throw std::runtime_error(origin + ": tensor " + name + " holds -128, outside an int8 weight's [-127, 127]");
  }
  if (!(contiguous_scales.isfinite().all().item<bool>() && contiguous_scales.gt(0).all().item<bool>())) {
    throw std::runtime_error(origin + ": tensor " + scale_name(name) +
                             " holds a scale that is not positive and finite");
  }
  return int8_rows_from(contiguous_values, contiguous_scales);
}

/// Loads every parameter and buffer of `model` from `weights`. In an int8 model file
/// (`int8_names` not empty) those weights are read quantized and returned by name, their float
/// parameters left as they are.
std::map<std::string, Int8Rows> load_weights(torch::serialize::InputArchive& weights, const nlohmann::json& checksums,
                                             Transformer& model, const std::set<std::string>& int8_names,
                                             const std::string& origin) {
  torch::NoGradGuard no_grad;
  std::set<const void*> adopted;
  std::set<std::string> expected;
  std::map<std::string, Int8Rows> int8;
  for (auto& [name, tensor] : named_state(model)) {
    expected.insert(name);
    if (int8_names.count(name) != 0) {
      expected.insert(scale_name(name));
      int8[name] = read_int8_weight(weights, checksums, name, tensor.sizes(), origin);
      continue;
    }
    const auto stored = read_tensor(weights, name, origin);
    if (!stored.is_floating_point()) {
      throw std::runtime_error(origin + ": tensor " + name + " holds " +
                               std::string(c10::toString(stored.scalar_type())) + ", not floating-point weights");
    }
    if (stored.sizes() != tensor.sizes()) {
      throw std::runtime_error(origin + ": tensor " + name + " has shape " + shape_string(stored.sizes()) +
                               ", the model built from its config expects " + shape_string(tensor.sizes()));
    }
    check_checksum(checksums, name, stored, origin);
    adopt_or_copy(tensor, stored, adopted);
  }
  for (const auto& key : weights.keys()) {
    if (expected.count(key) == 0) throw std::runtime_error(origin + ": unexpected tensor " + key);
  }
  return int8;
}

/// Prepares `model` from an int8 model file's quantized weights (load_weights): each linear layer
/// and the output matrix, as --quantize int8 would have quantized them.
void prepare_int8(Transformer& model, const std::map<std::string, Int8Rows>& int8) {
  // Side by side, the costliest first: FBGEMM's packing of each weight is serial work, most of
  // such a file's start-up (BENCHMARKS.md). No two jobs touch the same module.
  std::vector<CostedJob> jobs;
  for (const auto& item : model->named_modules()) {
    auto* linear = item.value()->as<LinearImpl>();
    if (linear == nullptr) continue;
    const Int8Rows& rows = int8.at(item.key() + ".weight");
    jobs.push_back({rows.values.numel(), [linear, &rows] { linear->load_int8(rows); }});
  }
  const Int8Rows& output = int8.at(output_matrix_name(model));
  jobs.push_back({output.values.numel(), [&model, &output] { model->load_int8_output(output); }});
  run_costliest_first(std::move(jobs));
}

}  // namespace

void write_model(torch::serialize::OutputArchive& archive, Transformer& model, const std::string& tokenizer_proto,
                 const Shortlist& shortlist, ModelFileWeights stored_as) {
  if (model->loaded_in_int8()) {
    throw std::invalid_argument("a model read from an int8 model file holds no float weights to write");
  }
  archive.write("format", c10::IValue(std::string(kMagic)));
  archive.write("format_version", c10::IValue(kModelFormatVersion));
  archive.write("model_config", c10::IValue(nlohmann::json(model->config()).dump()));
  archive.write("tokenizer", bytes_to_tensor(tokenizer_proto));
  const bool int8 = stored_as == ModelFileWeights::kInt8;
  if (int8) archive.write("quantization", c10::IValue(std::string("int8")));
  const auto int8_names = int8 ? int8_weight_names(model) : std::set<std::string>();
  torch::serialize::OutputArchive weights;
  nlohmann::json checksums = nlohmann::json::object();
  const auto add = [&](const std::string& name, const torch::Tensor& tensor) {
    weights.write(name, tensor);
    checksums[name] = static_cast<int64_t>(tensor_crc32(tensor));
  };
  for (const auto& [name, tensor] : named_state(model)) {
    const auto cpu = tensor.detach().to(torch::kCPU);
    if (int8_names.count(name) == 0) {
      // An int8 model file decodes in float32 beside its int8 products: the rest in float32.
      add(name, int8 && cpu.is_floating_point() ? cpu.to(torch::kFloat32) : cpu);
      continue;
    }
    const auto rows = quantize_int8_rows(cpu.to(torch::kFloat32));
    add(name, rows.values);
    add(scale_name(name), rows.scales);
  }
  archive.write("weights", weights);
  archive.write("weights_crc32", c10::IValue(checksums.dump()));
  if (!shortlist.empty()) shortlist.write(archive);
}

LoadedModel read_model(torch::serialize::InputArchive& archive, const std::string& origin,
                       const torch::Device& device) {
  if (read_string(archive, "format", origin) != kMagic) throw std::runtime_error(origin + ": not a tfm model file");
  const int64_t version = read_int(archive, "format_version", origin);
  if (version != kModelFormatVersion) {
    throw std::runtime_error(origin + ": format version " + std::to_string(version) + ", this build reads " +
                             std::to_string(kModelFormatVersion));
  }
  std::error_code size_error;
  const uint64_t file_size = std::filesystem::file_size(origin, size_error);
  const uint64_t file_bytes = size_error ? UINT64_MAX : file_size;
  LoadedModel loaded;
  try {
    loaded.config = nlohmann::json::parse(read_string(archive, "model_config", origin));
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(origin + ": unreadable model config (" + error.what() + ")");
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(origin + ": unreadable model config (" + error.what() + ")");
  }
  c10::IValue quantization;
  const bool int8 = archive.try_read("quantization", quantization);
  if (int8 && (!quantization.isString() || quantization.toStringRef() != "int8")) {
    throw std::runtime_error(origin + ": unknown quantization (this build reads int8 model files)");
  }
  check_config_fits(loaded.config, origin, file_bytes, int8 ? 1.0 : 2.0);
  if (int8 && !device.is_cpu()) {
    throw std::runtime_error(origin + ": an int8 model file decodes on the CPU (" + device.str() + " asked)");
  }
  torch::Tensor tokenizer;
  if (!archive.try_read("tokenizer", tokenizer) || tokenizer.scalar_type() != torch::kUInt8 || tokenizer.dim() != 1) {
    throw std::runtime_error(origin + ": not a tfm model file (no tokenizer)");
  }
  loaded.tokenizer_proto = tensor_to_bytes(tokenizer, origin + ": the tokenizer");
  {
    const SkipParameterInit every_parameter_is_loaded_next;  // load_weights() requires each one
    loaded.model = Transformer(loaded.config);
  }
  torch::serialize::InputArchive weights;
  if (!archive.try_read("weights", weights)) throw std::runtime_error(origin + ": no weights");
  nlohmann::json checksums;  // null: a file from before checksums
  c10::IValue stored_checksums;
  if (archive.try_read("weights_crc32", stored_checksums)) {
    try {
      checksums = nlohmann::json::parse(stored_checksums.toStringRef());
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(origin + ": damaged weight checksums");
    }
  }
  const auto int8_rows = load_weights(weights, checksums, loaded.model,
                                      int8 ? int8_weight_names(loaded.model) : std::set<std::string>(), origin);
  if (int8) {
    loaded.model->eval();  // it can only translate
    prepare_int8(loaded.model, int8_rows);
  }
  torch::serialize::InputArchive shortlist;
  if (archive.try_read("shortlist", shortlist)) {
    loaded.shortlist = Shortlist::read(shortlist, loaded.config.vocab_size, origin);
  }
  loaded.model->to(device);
  return loaded;
}

void save_model_file(const std::string& path, Transformer& model, const std::string& tokenizer_proto,
                     const Shortlist& shortlist, ModelFileWeights stored_as) {
  torch::serialize::OutputArchive archive;
  write_model(archive, model, tokenizer_proto, shortlist, stored_as);
  save_archive(archive, path);
}

LoadedModel load_model_file(const std::string& path, const torch::Device& device) {
  auto archive = open_archive(path, device);
  try {
    return read_model(archive, path, device);
  } catch (const c10::Error& error) {
    // A zip archive with the right checksums but other contents (say, another program's file).
    const std::string message = error.what_without_backtrace();
    throw std::runtime_error(path + ": not a tfm model file (" + message.substr(0, message.find('\n')) + ")");
  }
}

LoadedModel load_float_model_file(const std::string& path, const torch::Device& device, const std::string& purpose) {
  // (On another device than the CPU, read_model refuses an int8 model file itself.)
  auto loaded = load_model_file(path, device);
  if (loaded.model->loaded_in_int8()) {
    throw std::runtime_error(path + ": an int8 model file, which only translates; " + purpose +
                             " needs the float model it was quantized from");
  }
  return loaded;
}

}  // namespace tfm
