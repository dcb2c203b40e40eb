#pragma once
#include <string>

namespace tfm {

/// What this build and this machine can do; `tfm --version` prints it.
struct Capabilities {
  std::string tfm_version;
  std::string torch_version;
  bool cuda_built = false;          // LibTorch was compiled with CUDA and its CUDA library is loaded
  std::string cuda_status;          // why CUDA is not loaded, when it is not
  long cuda_runtime_version = 0;    // e.g. 13020 for CUDA 13.2
  int cuda_devices = 0;             // usable CUDA devices now (0 without GPU or driver)
  bool cpu_bf16 = false;            // CPU has native bf16 matmul (AVX512-BF16 or AMX)
  bool cpu_tiles_withheld = false;  // CPU flags AMX-BF16 but this process cannot use the tiles
  std::string cpu_bf16_forced;      // the TFM_CPU_BF16 value that set cpu_bf16, when one did
  bool cuda_bf16 = false;           // first CUDA device supports bf16 (compute capability >= 8.0)
};

/// The environment variable TFM_CPU_BF16=native|emulated replaces the CPU's answer on bf16, so
/// that tests run `--dtype auto` both ways on any machine and benchmarks can measure a CPU without
/// bf16 on one that has it; other values are ignored (and `tfm --version` says so).
Capabilities probe_capabilities();

/// Whether oneDNN's bfloat16 products run on AMX tiles here: the CPU has AMX-BF16 and Linux lets
/// this process use it (LibTorch's init_amx asks, as oneDNN does). There a product of 8 or more
/// rows is several times faster through oneDNN than through AVX512-BF16, while compiling a kernel
/// for a new shape costs ~5-10 ms (BENCHMARKS.md). Not changed by TFM_CPU_BF16. False where
/// ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) caps oneDNN below AMX: tfm's own tile kernels keep to the
/// same cap, so that one variable gives the products of a CPU without AMX.
bool cpu_has_bf16_tiles();

/// Whether a CPU multiplies bfloat16 natively, from its flags and whether this process can use its
/// AMX tiles: AVX512-BF16 or AMX, except that a CPU which has AMX-BF16 but whose tiles are withheld
/// (by Linux, a hypervisor or an ISA cap) does not count. Without its tiles, such a CPU
/// (Sapphire Rapids and later) multiplied bfloat16 through AVX512-BF16 at 62% of its float32 rate
/// (BENCHMARKS.md); CPUs with AVX512-BF16 and no AMX at all (AMD Zen 4/5) multiply it 4x faster
/// than float32.
bool native_cpu_bf16(bool avx512_bf16, bool amx_bf16, bool tiles_usable);

/// Whether oneDNN's ISA cap `cap` (ONEDNN_MAX_CPU_ISA's value; null or empty: none) leaves it the
/// AMX tiles: none, ALL, or an ISA whose name holds AMX (AVX512_CORE_AMX, AVX10_1_512_AMX, ...).
bool onednn_isa_cap_allows_tiles(const char* cap);

/// Whether oneDNN computes bfloat16 products on this CPU at all, natively or by widening to float
/// (LibTorch's mkldnn_bf16_device_check: AVX512 BW, VL and DQ, or AVX-NE-CONVERT). Elsewhere (an
/// AVX2-only CPU) LibTorch's mkldnn bfloat16 ops throw, and bfloat16 products must take ATen's own
/// kernels. Not changed by TFM_CPU_BF16.
bool cpu_has_onednn_bf16();

/// Multi-line human-readable summary, one fact per line.
std::string describe(const Capabilities& caps);

}  // namespace tfm
