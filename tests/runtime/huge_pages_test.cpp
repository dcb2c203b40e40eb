#include "runtime/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/busy_scope.h"
#include "tests/huge_pages_support.h"

namespace tfm {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

/// The AnonHugePages of the mapping that holds `address` (/proc/self/smaps), in bytes.
int64_t huge_page_bytes_of_mapping(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoll(line.substr(14)) * 1024;  // "AnonHugePages:   4096 kB"
    }
  }
  return 0;
}

/// `size` bytes of private anonymous memory of its own mapping, starting on a 2 MiB boundary,
/// written with a pattern (so that every 4 KiB page is present).
class Region {
 public:
  explicit Region(int64_t size) : size_(size + 2 * kMiB) {
    mapping_ = mmap(nullptr, static_cast<size_t>(size_), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(mapping_, MAP_FAILED);
    const auto at = reinterpret_cast<uintptr_t>(mapping_);
    start_ = reinterpret_cast<uint32_t*>((at + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB));
    for (int64_t i = 0; i < size / 4; ++i) start_[i] = static_cast<uint32_t>(i * 2654435761U);
  }
  ~Region() { munmap(mapping_, static_cast<size_t>(size_)); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  const char* at(int64_t offset) const { return reinterpret_cast<const char*>(start_) + offset; }
  bool holds_pattern(int64_t size) const {
    for (int64_t i = 0; i < size / 4; ++i) {
      if (start_[i] != static_cast<uint32_t>(i * 2654435761U)) return false;
    }
    return true;
  }

 private:
  void* mapping_ = nullptr;
  int64_t size_;
  uint32_t* start_ = nullptr;
};

/// back_with_huge_pages until the kernel has had a free 2 MiB page for every page it asked for, a
/// few tries at most: memory other processes hold may come free meanwhile, and pages already
/// backed cost nothing the second time.
HugePageBytes backed_when_memory_allows(const std::vector<MemoryRange>& ranges) {
  HugePageBytes bytes = back_with_huge_pages(ranges);
  for (int retry = 0; retry < 5 && bytes.lacking_memory > 0; ++retry) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    bytes = back_with_huge_pages(ranges);
  }
  return bytes;
}

/// Whether the kernel had memory for every page asked for; otherwise the test says how much it
/// lacked and skips the rest (what it checked so far stands).
#define SKIP_IF_LACKING_MEMORY(bytes) \
  if ((bytes).lacking_memory > 0) GTEST_SKIP() << testing::lacking_memory_note((bytes).lacking_memory)

// Two weights 1 MiB apart are one span: the 2 MiB pages wholly inside [0, 7 MiB) are three,
// where each range alone holds one. Ranges 5 MiB apart stay two spans: the pages in the gap are
// not asked for. The kernel's own count (smaps) holds at least the pages backed (its khugepaged
// may collapse more of a mapping on its own), and the bytes are unchanged.
TEST(HugePages, BacksTheWholePagesInsideSpansOfNearbyRanges) {
  if (const auto why = testing::why_memory_cannot_collapse(); !why.empty()) GTEST_SKIP() << why;
  const Region near(8 * kMiB);
  const HugePageBytes one_span = backed_when_memory_allows({{near.at(0), 3 * kMiB}, {near.at(4 * kMiB), 3 * kMiB}});
  EXPECT_EQ(one_span.asked(), 6 * kMiB);
  EXPECT_GE(huge_page_bytes_of_mapping(near.at(0)), one_span.backed);
  EXPECT_TRUE(near.holds_pattern(8 * kMiB));

  const Region apart(12 * kMiB);
  const HugePageBytes two_spans = backed_when_memory_allows({{apart.at(8 * kMiB), 3 * kMiB}, {apart.at(0), 3 * kMiB}});
  EXPECT_EQ(two_spans.asked(), 4 * kMiB);  // [0, 2) and [8, 10) MiB; [2, 8) is left alone
  EXPECT_GE(huge_page_bytes_of_mapping(apart.at(0)), two_spans.backed);
  EXPECT_TRUE(apart.holds_pattern(12 * kMiB));
  SKIP_IF_LACKING_MEMORY(one_span);
  SKIP_IF_LACKING_MEMORY(two_spans);
  EXPECT_EQ(one_span.backed, 6 * kMiB);
  EXPECT_EQ(two_spans.backed, 4 * kMiB);
}

// HugePageBacking does the same on a thread of its own; wait() begins the work at once (the delay
// is an hour) and gives the bytes once it is done.
TEST(HugePages, BacksOnAThreadOfItsOwn) {
  if (const auto why = testing::why_memory_cannot_collapse(); !why.empty()) GTEST_SKIP() << why;
  const Region region(8 * kMiB);
  HugePageBacking backing({{region.at(0), 3 * kMiB}, {region.at(4 * kMiB), 3 * kMiB}}, std::chrono::hours(1));
  const HugePageBytes bytes = backing.wait();
  EXPECT_EQ(bytes.asked(), 6 * kMiB);
  EXPECT_EQ(backing.wait().backed, bytes.backed);
  EXPECT_GE(huge_page_bytes_of_mapping(region.at(0)), bytes.backed);
  EXPECT_TRUE(region.holds_pattern(8 * kMiB));
  SKIP_IF_LACKING_MEMORY(bytes);
  EXPECT_EQ(bytes.backed, 6 * kMiB);
}

// Asked to stop, it backs no further page; destroyed while waiting or at work, it stops and the
// bytes are as they were.
TEST(HugePages, StopsWhenAsked) {
  const Region region(40 * kMiB);
  EXPECT_EQ(back_with_huge_pages({{region.at(0), 38 * kMiB}}, [] { return false; }).asked(), 0);
  { const HugePageBacking waiting({{region.at(0), 38 * kMiB}}, std::chrono::hours(1)); }
  { const HugePageBacking working({{region.at(0), 38 * kMiB}}, std::chrono::milliseconds(0)); }
  EXPECT_TRUE(region.holds_pattern(40 * kMiB));
  const HugePageBacking nothing;
}

// While the process is busy (a decoding step), the work waits before its next page; once the
// process has been quiet long enough it goes on by itself.
TEST(HugePages, WaitsForTheProcessToBeQuietBeforeEachPage) {
  if (const auto why = testing::why_memory_cannot_collapse(); !why.empty()) GTEST_SKIP() << why;
  const Region region(8 * kMiB);
  std::optional<BusyScope> busy(std::in_place);
  HugePageBacking backing({{region.at(0), 3 * kMiB}, {region.at(4 * kMiB), 3 * kMiB}}, std::chrono::milliseconds(0));
  // Before its first page; without the wait it would back them all, which ends the loop too.
  while (!backing.waiting_for_quiet() && huge_page_bytes_of_mapping(region.at(0)) < 6 * kMiB) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(backing.waiting_for_quiet());
  busy.reset();
  // By itself, not through wait(); the deadline only keeps a kernel that refuses from hanging the test.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (huge_page_bytes_of_mapping(region.at(0)) < 6 * kMiB && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  const int64_t backed_by_itself = huge_page_bytes_of_mapping(region.at(0));
  const HugePageBytes bytes = backing.wait();
  EXPECT_EQ(bytes.asked(), 6 * kMiB);
  EXPECT_FALSE(backing.waiting_for_quiet());
  EXPECT_TRUE(region.holds_pattern(8 * kMiB));
  SKIP_IF_LACKING_MEMORY(bytes);
  EXPECT_GE(backed_by_itself, 6 * kMiB);
}

// wait() does the work now, busy or not.
TEST(HugePages, WaitDoesNotWaitForQuiet) {
  if (const auto why = testing::why_memory_cannot_collapse(); !why.empty()) GTEST_SKIP() << why;
  const Region region(8 * kMiB);
  const BusyScope busy;
  HugePageBacking backing({{region.at(0), 3 * kMiB}, {region.at(4 * kMiB), 3 * kMiB}}, std::chrono::milliseconds(0));
  const HugePageBytes bytes = backing.wait();
  EXPECT_EQ(bytes.asked(), 6 * kMiB);
  SKIP_IF_LACKING_MEMORY(bytes);
  EXPECT_EQ(bytes.backed, 6 * kMiB);
}

TEST(HugePages, LeavesRangesWithoutAWholePageAlone) {
  const Region region(4 * kMiB);
  EXPECT_EQ(back_with_huge_pages({}).asked(), 0);
  EXPECT_EQ(back_with_huge_pages({{region.at(kMiB), 2 * kMiB}}).asked(), 0);  // straddles a boundary
  EXPECT_EQ(back_with_huge_pages({{nullptr, 8 * kMiB}, {region.at(0), 0}}).asked(), 0);
  EXPECT_TRUE(region.holds_pattern(4 * kMiB));
}

}  // namespace
}  // namespace tfm
