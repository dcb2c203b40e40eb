#include "runtime/allocator.h"

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "runtime/page_pool.h"

// jemalloc's control interface, weak: resolved only when the program links jemalloc (tfm does,
// the test programs do not).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen) __attribute__((weak));

namespace tfm {

bool release_free_memory() {
  PagePool::shared().release_free();
  if (mallctl == nullptr) return false;
  // MALLCTL_ARENAS_ALL (4096): purge the unused dirty pages of every arena.
  return mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0;
}

namespace {

/// Sets jemalloc's decay time of `kind` ("dirty" or "muzzy") pages to `milliseconds` (-1: never)
/// for the arenas made later (one per thread group) and for each that exists.
bool set_decay(const std::string& kind, ssize_t milliseconds) {
  const std::string default_name = "arenas." + kind + "_decay_ms";
  bool ok = mallctl(default_name.c_str(), nullptr, nullptr, &milliseconds, sizeof(milliseconds)) == 0;
  unsigned arenas = 0;
  size_t size = sizeof(arenas);
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return false;
  for (unsigned i = 0; i < arenas; ++i) {
    const std::string name = "arena." + std::to_string(i) + "." + kind + "_decay_ms";
    // An arena not yet initialized refuses (EFAULT); it takes the default above when it is.
    mallctl(name.c_str(), nullptr, nullptr, &milliseconds, sizeof(milliseconds));
  }
  return ok;
}

}  // namespace

bool return_freed_memory_after(long milliseconds) {
  PagePool::shared().release_free_after(milliseconds);
  if (mallctl == nullptr) return false;
  const bool dirty = set_decay("dirty", milliseconds);
  return set_decay("muzzy", milliseconds) && dirty;
}

bool lend_freed_memory_to_the_kernel_after(long milliseconds) {
  if (mallctl == nullptr) return false;
  const bool dirty = set_decay("dirty", milliseconds);
  return set_decay("muzzy", -1) && dirty;
}

int this_thread_arena() {
  if (mallctl == nullptr) return -1;
  unsigned arena = 0;
  size_t size = sizeof(arena);
  return mallctl("thread.arena", &arena, &size, nullptr, 0) == 0 ? static_cast<int>(arena) : -1;
}

bool use_arena(int arena) {
  if (mallctl == nullptr || arena < 0) return false;
  auto index = static_cast<unsigned>(arena);
  return mallctl("thread.arena", nullptr, nullptr, &index, sizeof(index)) == 0;
}

}  // namespace tfm
