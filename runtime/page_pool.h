#pragma once
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>

namespace tfm {

/// A process-wide pool of page-aligned regions, each a mapping of its own, for large buffers whose
/// sizes change from one use to the next (the decoder's self-attention caches, which grow by a few
/// positions and lose the rows of finished sentences every few steps). jemalloc keeps a freed
/// buffer where it lay, and with decay off (runtime/allocator.h) a later, larger buffer fits no
/// such hole: a base-size model's default batch kept ~150 MB of them (BENCHMARKS.md). Here any
/// free region serves any request: one too small is grown with mremap, which moves its pages
/// instead of copying them and faults in only the bytes added, and one much too large is cut
/// down. So the pool holds about the most its buffers ever needed at once, its pages stay with
/// the process (re-faulting a page costs ~10 us on these virtual machines), and two threads
/// taking turns share them. Linux only; elsewhere available() is false.
class PagePool {
 public:
  /// The pool the decoder's caches come from.
  static PagePool& shared();

  /// Whether regions can be taken (Linux: mmap and mremap).
  static bool available();

  PagePool() = default;
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;
  /// Unmaps every region; the regions lent out must have been given back.
  ~PagePool();

  /// A region of at least `bytes` bytes (at least a page), page-aligned, its contents undefined:
  /// the smallest free region that holds it (cut down to `bytes` where it is more than twice
  /// that), else the largest free region grown to `bytes`, else a new mapping. Throws
  /// std::bad_alloc when the system has no memory for it.
  void* take(size_t bytes);
  /// Returns a region that take() gave, to serve later requests.
  void give_back(void* region);
  /// Unmaps the free regions (their pages go back to the system). Returns the bytes unmapped.
  size_t release_free();
  /// From now on, at each take() and give_back(), unmaps the regions given back more than
  /// `milliseconds` ago (a server whose load changes; runtime/allocator.h does the same for
  /// jemalloc). Negative: never (the default).
  void release_free_after(long milliseconds);

  /// Bytes of the regions lent out, and of all regions (lent and free).
  size_t lent_bytes() const;
  size_t held_bytes() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct FreeRegion {
    void* region;
    Clock::time_point given_back;
  };
  /// Unmaps the free regions given back before now - release_after_ms_ (mutex_ held).
  void release_stale();
  /// Unmaps the free regions given back at `given_back_by` or before (mutex_ held); -> their bytes.
  size_t unmap_free_regions(Clock::time_point given_back_by);

  mutable std::mutex mutex_;
  std::multimap<size_t, FreeRegion> free_;  // size -> region
  std::map<void*, size_t> lent_;            // region -> size
  size_t free_bytes_ = 0, lent_bytes_ = 0;
  long release_after_ms_ = -1;
};

}  // namespace tfm
