#include "runtime/page_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tfm {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

class PagePoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PagePool::available()) GTEST_SKIP() << "PagePool needs Linux's mmap and mremap";
  }
};

TEST_F(PagePoolTest, RoundsToPagesAndCountsWhatIsLentAndHeld) {
  PagePool pool;
  void* a = pool.take(1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kPage, 0U);
  EXPECT_EQ(pool.lent_bytes(), kPage);
  void* b = pool.take(3 * kPage + 1);
  EXPECT_EQ(pool.lent_bytes(), 5 * kPage);
  pool.give_back(a);
  EXPECT_EQ(pool.lent_bytes(), 4 * kPage);
  EXPECT_EQ(pool.held_bytes(), 5 * kPage);
  pool.give_back(b);
  EXPECT_EQ(pool.lent_bytes(), 0U);
  EXPECT_EQ(pool.release_free(), 5 * kPage);
  EXPECT_EQ(pool.held_bytes(), 0U);
}

TEST_F(PagePoolTest, ServesARequestFromTheSmallestFreeRegionThatHoldsIt) {
  PagePool pool;
  void* small = pool.take(2 * kPage);
  void* large = pool.take(3 * kPage);
  pool.give_back(small);
  pool.give_back(large);
  EXPECT_EQ(pool.take(2 * kPage), small);
  EXPECT_EQ(pool.take(3 * kPage), large);
  EXPECT_EQ(pool.held_bytes(), 5 * kPage) << "both requests were served without a new mapping";
}

TEST_F(PagePoolTest, GrowsTheLargestFreeRegionKeepingItsContents) {
  PagePool pool;
  auto* region = static_cast<unsigned char*>(pool.take(2 * kPage));
  std::memset(region, 0x5A, 2 * kPage);
  pool.give_back(region);
  auto* grown = static_cast<unsigned char*>(pool.take(8 * kPage));
  EXPECT_EQ(pool.held_bytes(), 8 * kPage) << "the free region was grown, not joined by a new one";
  for (size_t i = 0; i < 2 * kPage; ++i) ASSERT_EQ(grown[i], 0x5A) << "byte " << i;
  std::memset(grown, 0, 8 * kPage);  // all of it is writable
  pool.give_back(grown);
}

TEST_F(PagePoolTest, CutsDownAFreeRegionMoreThanTwiceTheRequest) {
  PagePool pool;
  void* large = pool.take(10 * kPage);
  pool.give_back(large);
  EXPECT_EQ(pool.take(4 * kPage), large);
  EXPECT_EQ(pool.held_bytes(), 4 * kPage) << "the other 6 pages went back to the system";
  void* other = pool.take(3 * kPage);  // a new mapping: the pool has no free region
  pool.give_back(other);
  EXPECT_EQ(pool.take(2 * kPage), other) << "3 pages for 2: within twice, lent whole";
  EXPECT_EQ(pool.lent_bytes(), 7 * kPage);
  pool.give_back(large);
  pool.give_back(other);
}

TEST_F(PagePoolTest, ReleasesRegionsFreeLongerThanTheDelay) {
  PagePool pool;
  pool.give_back(pool.take(kPage));
  EXPECT_EQ(pool.held_bytes(), kPage) << "kept while no delay is set";
  pool.release_free_after(0);
  void* next = pool.take(2 * kPage);  // takes after releasing: a new mapping
  EXPECT_EQ(pool.held_bytes(), 2 * kPage);
  pool.give_back(next);
  EXPECT_EQ(pool.held_bytes(), 0U) << "given back with a delay of 0: unmapped at once";
}

TEST_F(PagePoolTest, RefusesARegionItDidNotLend) {
  PagePool pool;
  int not_lent = 0;
  EXPECT_THROW(pool.give_back(&not_lent), std::invalid_argument);
  void* region = pool.take(kPage);
  pool.give_back(region);
  EXPECT_THROW(pool.give_back(region), std::invalid_argument) << "given back twice";
}

TEST_F(PagePoolTest, ThreadsTakingTurnsShareItsRegions) {
  PagePool pool;
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t pages = 1 + (round * 7 + t) % 16;
        auto* region = static_cast<unsigned char*>(pool.take(pages * kPage));
        std::memset(region, t, pages * kPage);
        for (size_t i = 0; i < pages * kPage; i += kPage) ASSERT_EQ(region[i], t);
        pool.give_back(region);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(pool.lent_bytes(), 0U);
  EXPECT_LE(pool.held_bytes(), kThreads * 16 * kPage) << "no more than the threads held at once";
}

}  // namespace
}  // namespace tfm
