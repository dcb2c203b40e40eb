#include "runtime/capabilities.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string>

#include <ATen/Context.h>
#include <ATen/cpu/Utils.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "runtime/cuda_library.h"

namespace tfm {
namespace {

bool cpu_flag(const std::unordered_map<std::string, c10::IValue>& caps, const char* name) {
  const auto it = caps.find(name);
  return it != caps.end() && it->second.isBool() && it->second.toBool();
}

std::string cuda_version_string(long version) {
  // CUDART encodes 13.2 as 13020.
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string forced_note(const std::string& forced) {
  if (forced.empty()) return "";
  if (forced == "native" || forced == "emulated") return " [as TFM_CPU_BF16=" + forced + " says]";
  return " [TFM_CPU_BF16=" + forced + " ignored: expected native or emulated]";
}

}  // namespace

Capabilities probe_capabilities() {
  Capabilities caps;
  caps.tfm_version = TFM_VERSION;
  caps.torch_version = TORCH_VERSION;
  const CudaLibraryStatus& cuda = load_cuda_library();
  caps.cuda_status = cuda.reason;
  const auto& cuda_hooks = at::detail::getCUDAHooks();
  caps.cuda_built = cuda.loaded && cuda_hooks.hasCUDART();
  if (caps.cuda_built) caps.cuda_runtime_version = cuda_hooks.versionCUDART();
  caps.cuda_devices = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  const auto cpu = at::cpu::get_cpu_capabilities();
  const bool amx_bf16 = cpu_flag(cpu, "amx_bf16"), tiles = cpu_has_bf16_tiles();
  caps.cpu_bf16 = native_cpu_bf16(cpu_flag(cpu, "avx512_bf16"), amx_bf16, tiles);
  caps.cpu_tiles_withheld = amx_bf16 && !tiles;
  if (const char* forced = std::getenv("TFM_CPU_BF16"); forced != nullptr && *forced != '\0') {
    caps.cpu_bf16_forced = forced;
    if (caps.cpu_bf16_forced == "native" || caps.cpu_bf16_forced == "emulated") {
      caps.cpu_bf16 = caps.cpu_bf16_forced == "native";
      caps.cpu_tiles_withheld = false;  // the forced answer stands alone, its messages the usual ones
    }
  }
  caps.cuda_bf16 = caps.cuda_devices > 0 && cuda_hooks.supportsBFloat16ConvolutionWithCuDNNv8();
  return caps;
}

bool native_cpu_bf16(bool avx512_bf16, bool amx_bf16, bool tiles_usable) {
  if (amx_bf16) return tiles_usable;
  return avx512_bf16;
}

bool onednn_isa_cap_allows_tiles(const char* cap) {
  if (cap == nullptr || *cap == '\0') return true;
  std::string isa(cap);
  for (auto& c : isa) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return isa == "ALL" || isa.find("AMX") != std::string::npos;
}

bool cpu_has_bf16_tiles() {
  static const bool tiles = [] {
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (cap == nullptr) cap = std::getenv("DNNL_MAX_CPU_ISA");
    return onednn_isa_cap_allows_tiles(cap) && cpu_flag(at::cpu::get_cpu_capabilities(), "amx_bf16") &&
           at::cpu::init_amx();
  }();
  return tiles;
}

bool cpu_has_onednn_bf16() {
  static const bool onednn_bf16 = [] {
    const bool avx512_trio =
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    return avx512_trio || cpu_flag(at::cpu::get_cpu_capabilities(), "avx_ne_convert");
  }();
  return onednn_bf16;
}

std::string describe(const Capabilities& caps) {
  std::ostringstream out;
  out << "tfm " << caps.tfm_version << "\n"
      << "LibTorch " << caps.torch_version << "\n"
      << "CUDA: "
      << (caps.cuda_built ? "runtime " + cuda_version_string(caps.cuda_runtime_version) + "; " +
                                (caps.cuda_devices > 0 ? std::to_string(caps.cuda_devices) + " device(s) usable"
                                                       : std::string("no usable device here"))
                          : "not usable here: " + caps.cuda_status)
      << "\n"
      << "bf16: cpu "
      << (caps.cpu_bf16             ? "yes (native AVX512-BF16/AMX)"
          : caps.cpu_tiles_withheld ? "no (AMX tiles not usable here; AVX512-BF16 alone is slower than fp32)"
                                    : "no (emulated, slower than fp32)")
      << forced_note(caps.cpu_bf16_forced) << ", cuda " << (caps.cuda_bf16 ? "yes" : "no") << "\n";
  return out.str();
}

}  // namespace tfm
