#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include "runtime/capabilities.h"
#include "runtime/device.h"
#include "runtime/onednn_cache.h"
#include "runtime/precision.h"
#include "runtime/threads.h"

namespace tfm {
namespace {

TEST(OneDnnCache, IsBoundedUnlessTheUserChoseACapacity) {
  unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
  bound_onednn_primitive_cache();
  ASSERT_NE(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY"), nullptr);
  const int expected = cpu_has_bf16_tiles() ? kTilesPrimitiveCacheCapacity : kOneDnnPrimitiveCacheCapacity;
  EXPECT_EQ(std::string(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")), std::to_string(expected));
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "7", 1);
  bound_onednn_primitive_cache();
  EXPECT_EQ(std::string(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")), "7");
  unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
}

TEST(OneDnnCache, WidensForServingUnlessTheUserChoseACapacity) {
  unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
  bound_onednn_primitive_cache();
  widen_onednn_primitive_cache(kServingPrimitiveCacheCapacity);
  EXPECT_EQ(std::string(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")),
            std::to_string(kServingPrimitiveCacheCapacity));
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "7", 1);
  bound_onednn_primitive_cache();
  widen_onednn_primitive_cache(kServingPrimitiveCacheCapacity);
  EXPECT_EQ(std::string(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")), "7");
  unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
}

TEST(OneDnnCache, BoundsIdeepsCacheUnlessTheUserChoseACapacity) {
  unsetenv("LRU_CACHE_CAPACITY");
  bound_ideep_computation_cache();
  ASSERT_NE(std::getenv("LRU_CACHE_CAPACITY"), nullptr);
  EXPECT_EQ(std::string(std::getenv("LRU_CACHE_CAPACITY")), std::to_string(kIdeepComputationCacheCapacity));
  setenv("LRU_CACHE_CAPACITY", "7", 1);
  bound_ideep_computation_cache();
  EXPECT_EQ(std::string(std::getenv("LRU_CACHE_CAPACITY")), "7");
  unsetenv("LRU_CACHE_CAPACITY");
}

TEST(Device, ParsesCpuAndAuto) {
  EXPECT_EQ(resolve_device("cpu"), torch::Device(torch::kCPU));
  const auto automatic = resolve_device("auto");
  EXPECT_EQ(automatic.is_cuda(), torch::cuda::is_available());
}

TEST(Device, RejectsMalformedValues) {
  EXPECT_THROW(resolve_device("gpu"), std::invalid_argument);
  EXPECT_THROW(resolve_device("cuda:"), std::invalid_argument);
  EXPECT_THROW(resolve_device("cuda:x"), std::invalid_argument);
  EXPECT_THROW(resolve_device("CPU"), std::invalid_argument);
}

TEST(Device, CudaWithoutGpuIsAClearError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA; the no-GPU error cannot be checked";
  try {
    resolve_device("cuda:0");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("CUDA is not usable"), std::string::npos) << error.what();
  }
}

TEST(Threads, SetsRequestedCountAndDefaultsToAllCores) {
  EXPECT_EQ(configure_threads(1), 1);
  EXPECT_EQ(configure_threads(0), available_cores());
}

// `tfm serve` gives each decoding thread a count of its own. LibTorch's first parallel loop on a
// thread used to reset that thread's count to the one another thread set last, so a one-thread
// helper could start a second OpenMP team and make libgomp sleep between every parallel region.
TEST(Threads, ACountSetOnAThreadSurvivesOtherThreadsSettingTheirs) {
  std::promise<void> helper_set;
  std::promise<void> main_set;
  int helper_threads = 0;
  std::thread helper([&] {
    configure_threads(1);
    helper_set.set_value();
    main_set.get_future().wait();
    at::parallel_for(0, 1 << 16, 1, [](int64_t, int64_t) {});  // this binary's first parallel loop
    torch::ones({1 << 20}).add_(1);                            // LibTorch's own
    helper_threads = at::get_num_threads();
  });
  helper_set.get_future().wait();
  configure_threads(2);
  main_set.set_value();
  helper.join();
  EXPECT_EQ(helper_threads, 1);
  EXPECT_EQ(at::get_num_threads(), 2);
  configure_threads(0);
}

TEST(Capabilities, ReportsVersions) {
  const auto caps = probe_capabilities();
  EXPECT_FALSE(caps.torch_version.empty());
  EXPECT_EQ(caps.tfm_version, TFM_VERSION);
  EXPECT_NE(describe(caps).find("LibTorch " + caps.torch_version), std::string::npos);
}

// The flag decides whether bfloat16 weights are packed for oneDNN; asked of oneDNN itself, it
// must give the same answer on every CPU (an AVX2-only one refuses, an AVX-512 one packs).
TEST(Capabilities, OneDnnBf16IsWhetherOneDnnPacksABfloat16Weight) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch has no oneDNN";
  const auto reorder = c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_reorder_linear_weight", "");
  torch::jit::Stack stack{torch::ones({8, 16}, torch::kBFloat16), std::optional<int64_t>()};
  bool packs = true;
  try {
    reorder.callBoxed(&stack);
  } catch (const c10::Error&) {
    packs = false;
  }
  EXPECT_EQ(cpu_has_onednn_bf16(), packs);
}

/// Sets an environment variable for one scope and puts back what was there (the suite itself may
/// run under TFM_CPU_BF16).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Capabilities, AnIsaCapBelowAmxKeepsTfmsTileKernelsOffToo) {
  // oneDNN's own names (its docs' ONEDNN_MAX_CPU_ISA values), in any case.
  for (const char* allows : {static_cast<const char*>(nullptr), "", "ALL", "all", "AVX512_CORE_AMX", "avx10_1_512_amx",
                             "AVX512_CORE_AMX_FP16"}) {
    EXPECT_TRUE(onednn_isa_cap_allows_tiles(allows)) << (allows ? allows : "(unset)");
  }
  for (const char* keeps_off :
       {"AVX512_CORE_BF16", "avx512_core_bf16", "AVX512_CORE_FP16", "AVX10_1_512", "AVX2", "SSE41"}) {
    EXPECT_FALSE(onednn_isa_cap_allows_tiles(keeps_off)) << keeps_off;
  }
}

TEST(Capabilities, AmxWithoutUsableTilesIsNotNativeBf16) {
  EXPECT_TRUE(native_cpu_bf16(/*avx512_bf16=*/true, /*amx_bf16=*/false, /*tiles_usable=*/false));  // Zen 4/5
  EXPECT_TRUE(native_cpu_bf16(true, true, true));    // Sapphire Rapids with its tiles
  EXPECT_FALSE(native_cpu_bf16(true, true, false));  // ... without them
  EXPECT_FALSE(native_cpu_bf16(false, false, false));
}

TEST(Capabilities, TfmCpuBf16ReplacesTheProbesAnswerAndVersionSaysSo) {
  {
    ScopedEnv env("TFM_CPU_BF16", "native");
    const auto caps = probe_capabilities();
    EXPECT_TRUE(caps.cpu_bf16);
    EXPECT_TRUE(probe_precision_support().cpu_bf16_native);
    EXPECT_NE(describe(caps).find("bf16: cpu yes (native AVX512-BF16/AMX) [as TFM_CPU_BF16=native says]"),
              std::string::npos)
        << describe(caps);
  }
  {
    ScopedEnv env("TFM_CPU_BF16", "emulated");
    EXPECT_FALSE(probe_capabilities().cpu_bf16);
    EXPECT_FALSE(probe_precision_support().cpu_bf16_native);
  }
  bool hardware = false;
  {
    ScopedEnv env("TFM_CPU_BF16", "");
    hardware = probe_capabilities().cpu_bf16;
  }
  ScopedEnv env("TFM_CPU_BF16", "yes");
  const auto caps = probe_capabilities();
  EXPECT_EQ(caps.cpu_bf16, hardware);
  EXPECT_NE(describe(caps).find("[TFM_CPU_BF16=yes ignored: expected native or emulated]"), std::string::npos);
}

}  // namespace
}  // namespace tfm
