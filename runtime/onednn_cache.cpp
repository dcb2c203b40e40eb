#include "runtime/onednn_cache.h"

#include <cstdlib>
#include <string>

namespace tfm {

void bound_onednn_primitive_cache() {
  // oneDNN reads the variable once, when its cache is created at the first primitive.
  const std::string capacity = std::to_string(kOneDnnPrimitiveCacheCapacity);
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", capacity.c_str(), /*overwrite=*/0);
}

void bound_ideep_computation_cache() {
  // ideep reads the variable once, when its cache is first used (loading packs weights through it).
  const std::string capacity = std::to_string(kIdeepComputationCacheCapacity);
  setenv("LRU_CACHE_CAPACITY", capacity.c_str(), /*overwrite=*/0);
}

}  // namespace tfm
