#include "runtime/allocator.h"

#include <cstddef>
#include <string>

// jemalloc's control interface, weak: resolved only when the program links jemalloc (tfm does,
// the test programs do not).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen) __attribute__((weak));

namespace tfm {

bool release_free_memory() {
  if (mallctl == nullptr) return false;
  // MALLCTL_ARENAS_ALL (4096): purge the unused dirty pages of every arena.
  return mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0;
}

}  // namespace tfm
