#include "runtime/onednn_cache.h"

#include <cstdlib>
#include <string>

#include "runtime/capabilities.h"

namespace tfm {
namespace {

// Whether bound_onednn_primitive_cache ran, and whether ONEDNN_PRIMITIVE_CACHE_CAPACITY was set
// before it: the user's own value, which tfm never changes.
bool bounded = false;
bool user_chose_primitive_cache = false;

}  // namespace

void bound_onednn_primitive_cache() {
  bounded = true;
  user_chose_primitive_cache = std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr;
  // oneDNN reads the variable once, when its cache is created at the first primitive.
  const std::string capacity =
      std::to_string(cpu_has_bf16_tiles() ? kTilesPrimitiveCacheCapacity : kOneDnnPrimitiveCacheCapacity);
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", capacity.c_str(), /*overwrite=*/0);
}

void widen_onednn_primitive_cache(int capacity) {
  const bool users = bounded ? user_chose_primitive_cache : std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr;
  if (users) return;
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", std::to_string(capacity).c_str(), /*overwrite=*/1);
}

void bound_ideep_computation_cache() {
  // ideep reads the variable once, when its cache is first used (loading packs weights through it).
  const std::string capacity = std::to_string(kIdeepComputationCacheCapacity);
  setenv("LRU_CACHE_CAPACITY", capacity.c_str(), /*overwrite=*/0);
}

}  // namespace tfm
