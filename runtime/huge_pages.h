#pragma once
#include <cstdint>
#include <vector>

namespace tfm {

/// Bytes a process reads over and over: a model's prepared weights.
struct MemoryRange {
  const void* data = nullptr;
  int64_t size = 0;
};

/// Backs the memory of `ranges` with 2 MiB pages now (Linux's MADV_COLLAPSE, 6.1 on), where
/// whole aligned 2 MiB pages lie inside them. Ranges closer than 4 MiB are taken as one span:
/// a model's weights lie side by side in the heap with a few freed blocks between them, which
/// stay resident under tfm's allocator settings, so a span costs almost no memory beyond them.
/// At batch 1 a decoding step streams every weight once, ~19 MB at the small size: through 4 KiB
/// pages that is ~4,700 address translations a step, more than the CPU's translation cache
/// holds, and each one missed costs a page walk (two-level under a hypervisor). Returns the bytes
/// now in 2 MiB pages; 0 where the kernel cannot (older than 6.1, or transparent huge pages off),
/// which leaves the memory as it was.
int64_t back_with_huge_pages(std::vector<MemoryRange> ranges);

}  // namespace tfm
