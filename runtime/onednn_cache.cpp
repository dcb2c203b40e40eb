#include "runtime/onednn_cache.h"

#include <cstdlib>
#include <string>

namespace tfm {

void bound_onednn_primitive_cache() {
  // oneDNN reads the variable once, when its cache is created at the first primitive.
  const std::string capacity = std::to_string(kOneDnnPrimitiveCacheCapacity);
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", capacity.c_str(), /*overwrite=*/0);
}

}  // namespace tfm
