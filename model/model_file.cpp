#include "model/model_file.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>

#include <torch/torch.h>
#include <zlib.h>

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

torch::Tensor bytes_to_tensor(const std::string& bytes) {
  auto tensor = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

std::string tensor_to_bytes(const torch::Tensor& tensor) {
  const auto cpu = tensor.to(torch::kCPU).contiguous();
  return std::string(static_cast<const char*>(cpu.data_ptr()), static_cast<size_t>(cpu.numel()));
}

/// CRC-32 of a tensor's bytes (on the CPU, contiguous): stored per tensor in model files so that
/// damage (a flipped bit, an overwritten block) is an error naming the file, not a silently
/// wrong model. zlib's CRC runs at GB/s: ~30 ms for the 30 MB `small` model.
int64_t tensor_crc32(const torch::Tensor& tensor) {
  const auto cpu = tensor.detach().to(torch::kCPU).contiguous();
  const auto* bytes = static_cast<const Bytef*>(cpu.data_ptr());
  size_t left = cpu.numel() * cpu.element_size();
  uLong crc = crc32(0L, Z_NULL, 0);
  while (left > 0) {
    const auto chunk = static_cast<uInt>(std::min<size_t>(left, 1U << 30));
    crc = crc32(crc, bytes, chunk);
    bytes += chunk;
    left -= chunk;
  }
  return static_cast<int64_t>(crc);
}

/// fsync of a file or directory by path (a rename is durable once its directory is flushed).
bool flush_to_disk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

c10::IValue read_value(torch::serialize::InputArchive& archive, const std::string& key, const std::string& origin) {
  c10::IValue value;
  if (!archive.try_read(key, value)) throw std::runtime_error(origin + ": not a tfm model file (no '" + key + "')");
  return value;
}

void load_weights(torch::serialize::InputArchive& weights, const nlohmann::json& checksums, Transformer& model,
                  const std::string& origin) {
  torch::NoGradGuard no_grad;
  std::set<std::string> expected;
  for (auto& [name, tensor] : named_state(model)) {
    expected.insert(name);
    torch::Tensor stored;
    if (!weights.try_read(name, stored)) {
      throw std::runtime_error(origin + ": missing tensor " + name + " (the file does not match its own config)");
    }
    if (stored.sizes() != tensor.sizes()) {
      throw std::runtime_error(origin + ": tensor " + name + " has shape " + shape_string(stored.sizes()) +
                               ", the model built from its config expects " + shape_string(tensor.sizes()));
    }
    // Files written before checksums existed have none; every file written since has one per tensor.
    if (!checksums.is_null() && (!checksums.contains(name) || !checksums[name].is_number_integer() ||
                                 checksums[name].get<int64_t>() != tensor_crc32(stored))) {
      throw std::runtime_error(origin + ": tensor " + name + " is damaged (its checksum does not match; the file " +
                               "was changed or corrupted after it was written)");
    }
    tensor.copy_(stored);
  }
  for (const auto& key : weights.keys()) {
    if (expected.count(key) == 0) throw std::runtime_error(origin + ": unexpected tensor " + key);
  }
}

}  // namespace

void write_model(torch::serialize::OutputArchive& archive, Transformer& model, const std::string& tokenizer_proto) {
  archive.write("format", c10::IValue(std::string(kMagic)));
  archive.write("format_version", c10::IValue(kModelFormatVersion));
  archive.write("model_config", c10::IValue(nlohmann::json(model->config()).dump()));
  archive.write("tokenizer", bytes_to_tensor(tokenizer_proto));
  torch::serialize::OutputArchive weights;
  nlohmann::json checksums = nlohmann::json::object();
  for (const auto& [name, tensor] : named_state(model)) {
    const auto cpu = tensor.detach().to(torch::kCPU);
    weights.write(name, cpu);
    checksums[name] = tensor_crc32(cpu);
  }
  archive.write("weights", weights);
  archive.write("weights_crc32", c10::IValue(checksums.dump()));
}

LoadedModel read_model(torch::serialize::InputArchive& archive, const std::string& origin,
                       const torch::Device& device) {
  if (read_value(archive, "format", origin).toStringRef() != kMagic) {
    throw std::runtime_error(origin + ": not a tfm model file");
  }
  const int64_t version = read_value(archive, "format_version", origin).toInt();
  if (version != kModelFormatVersion) {
    throw std::runtime_error(origin + ": format version " + std::to_string(version) + ", this build reads " +
                             std::to_string(kModelFormatVersion));
  }
  LoadedModel loaded;
  try {
    loaded.config = nlohmann::json::parse(read_value(archive, "model_config", origin).toStringRef());
  } catch (const std::exception& error) {
    throw std::runtime_error(origin + ": unreadable model config (" + error.what() + ")");
  }
  torch::Tensor tokenizer;
  archive.read("tokenizer", tokenizer);
  loaded.tokenizer_proto = tensor_to_bytes(tokenizer);
  loaded.model = Transformer(loaded.config);
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
  load_weights(weights, checksums, loaded.model, origin);
  loaded.model->to(device);
  return loaded;
}

torch::serialize::InputArchive open_archive(const std::string& path, const torch::Device& device) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    throw std::runtime_error(path + ": cannot read model file (" + message.substr(0, message.find('\n')) + ")");
  }
  return archive;
}

void save_archive(torch::serialize::OutputArchive& archive, const std::string& path) {
  // Written beside, flushed to disk, then renamed over the old file: a crash or a full disk at
  // any moment leaves either the old file or the new one, never a torn one.
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot write (" + temporary + ": " + std::strerror(errno) + ")");
  int error = 0;
  // Our own writes, because LibTorch's file writer throws from its destructor when a write comes
  // up short (a full disk), which terminates the process. The first failure is remembered and
  // every later chunk dropped; LibTorch is always told the write succeeded.
  auto write_chunk = [&](const void* data, size_t size) -> size_t {
    const char* bytes = static_cast<const char*>(data);
    for (size_t done = 0; error == 0 && done < size;) {
      const ssize_t n = ::write(fd, bytes + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(n);
    }
    return size;
  };
  try {
    archive.save_to(write_chunk);
  } catch (const c10::Error& e) {
    ::close(fd);
    std::remove(temporary.c_str());
    const std::string message = e.what_without_backtrace();
    throw std::runtime_error(path + ": cannot write (" + message.substr(0, message.find('\n')) + ")");
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error(path + ": cannot write (" + std::strerror(error) + "); the previous file is kept");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(path + ": cannot rename " + temporary + " into place");
  }
  const auto directory = std::filesystem::path(path).parent_path();
  flush_to_disk(directory.empty() ? "." : directory.string());
}

void save_model_file(const std::string& path, Transformer& model, const std::string& tokenizer_proto) {
  torch::serialize::OutputArchive archive;
  write_model(archive, model, tokenizer_proto);
  save_archive(archive, path);
}

LoadedModel load_model_file(const std::string& path, const torch::Device& device) {
  auto archive = open_archive(path, device);
  return read_model(archive, path, device);
}

}  // namespace tfm
