#include "runtime/page_pool.h"

#include <iterator>
#include <new>
#include <stdexcept>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace tfm {
namespace {

#if defined(__linux__)
size_t page_rounded(size_t bytes) {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes == 0 ? page : (bytes + page - 1) / page * page;
}

/// `region` of `size` bytes resized to `bytes`, moved where it cannot grow in place.
void* resized(void* region, size_t size, size_t bytes) {
  void* moved = mremap(region, size, bytes, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) throw std::bad_alloc();
  return moved;
}
#endif

}  // namespace

PagePool& PagePool::shared() {
  static auto* pool = new PagePool();  // never destroyed: tensors may give regions back at exit
  return *pool;
}

bool PagePool::available() {
#if defined(__linux__)
  return true;
#else
  return false;
#endif
}

PagePool::~PagePool() { release_free(); }

void* PagePool::take(size_t bytes) {
#if defined(__linux__)
  bytes = page_rounded(bytes);
  const std::lock_guard<std::mutex> lock(mutex_);
  release_stale();
  void* region = nullptr;
  if (auto fits = free_.lower_bound(bytes); fits != free_.end()) {
    region = fits->second.region;
    size_t size = fits->first;
    free_.erase(fits);
    free_bytes_ -= size;
    // Much too large: the rest goes back to the system rather than lie idle under a small buffer.
    // (Shrinking never moves the region; should it fail, the region is lent whole.)
    if (size > 2 * bytes && mremap(region, size, bytes, 0) != MAP_FAILED) size = bytes;
    bytes = size;
  } else if (!free_.empty()) {
    const auto largest = std::prev(free_.end());
    const size_t size = largest->first;
    free_bytes_ -= size;
    void* grown = largest->second.region;
    free_.erase(largest);
    try {
      region = resized(grown, size, bytes);
    } catch (const std::bad_alloc&) {
      munmap(grown, size);
      throw;
    }
  } else {
    region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) throw std::bad_alloc();
  }
  lent_.emplace(region, bytes);
  lent_bytes_ += bytes;
  return region;
#else
  (void)bytes;
  throw std::logic_error("PagePool: not available on this system");
#endif
}

void PagePool::give_back(void* region) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto lent = lent_.find(region);
  if (lent == lent_.end()) throw std::invalid_argument("PagePool::give_back: a region the pool did not lend");
  free_.emplace(lent->second, FreeRegion{region, Clock::now()});
  free_bytes_ += lent->second;
  lent_bytes_ -= lent->second;
  lent_.erase(lent);
  release_stale();
}

void PagePool::release_free_after(long milliseconds) {
  const std::lock_guard<std::mutex> lock(mutex_);
  release_after_ms_ = milliseconds;
}

void PagePool::release_stale() {
  if (release_after_ms_ >= 0) unmap_free_regions(Clock::now() - std::chrono::milliseconds(release_after_ms_));
}

size_t PagePool::unmap_free_regions(Clock::time_point given_back_by) {
  size_t released = 0;
  for (auto it = free_.begin(); it != free_.end();) {
    if (it->second.given_back > given_back_by) {
      ++it;
      continue;
    }
#if defined(__linux__)
    munmap(it->second.region, it->first);
#endif
    released += it->first;
    it = free_.erase(it);
  }
  free_bytes_ -= released;
  return released;
}

size_t PagePool::release_free() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return unmap_free_regions(Clock::time_point::max());
}

size_t PagePool::lent_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return lent_bytes_;
}

size_t PagePool::held_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return lent_bytes_ + free_bytes_;
}

}  // namespace tfm
