#include "runtime/allocator.h"

#include <sys/types.h>

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

bool return_freed_memory_after(long milliseconds) {
  if (mallctl == nullptr) return false;
  ssize_t decay = milliseconds;
  bool ok = true;
  // The default for arenas made later (one per thread group), then each arena that exists.
  for (const char* name : {"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms"}) {
    ok = mallctl(name, nullptr, nullptr, &decay, sizeof(decay)) == 0 && ok;
  }
  unsigned arenas = 0;
  size_t size = sizeof(arenas);
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return false;
  for (unsigned i = 0; i < arenas; ++i) {
    for (const char* kind : {"dirty", "muzzy"}) {
      const std::string name = "arena." + std::to_string(i) + "." + kind + "_decay_ms";
      // An arena not yet initialized refuses (EFAULT); it takes the default above when it is.
      mallctl(name.c_str(), nullptr, nullptr, &decay, sizeof(decay));
    }
  }
  return ok;
}

}  // namespace tfm
