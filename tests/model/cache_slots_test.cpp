#include "model/cache_slots.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace tfm {
namespace {

/// Each row's slots at positions 0 .. filled-1.
std::vector<std::vector<int64_t>> table(const CacheSlots& slots, int64_t rows, int64_t filled) {
  std::vector<std::vector<int64_t>> out(rows);
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t t = 0; t < filled; ++t) out[n].push_back(slots.slot(n, t));
  }
  return out;
}

TEST(CacheSlots, ReordersComposeAndEachStepWritesItsOwnRow) {
  CacheSlots slots;
  EXPECT_TRUE(slots.identity());
  EXPECT_EQ(slots.slot(2, 5), 2);
  slots.write(3, 0);  // identity: nothing kept
  EXPECT_TRUE(slots.identity());

  const std::vector<int64_t> first = {2, 0, 0};  // after position 0: rows move, one repeats
  slots.reorder(first.data(), 3, 1);
  slots.write(3, 1);
  EXPECT_EQ(table(slots, 3, 2), (std::vector<std::vector<int64_t>>{{2, 0}, {0, 1}, {0, 2}}));

  const std::vector<int64_t> second = {2, 1};  // after position 1: row 0 leaves
  slots.reorder(second.data(), 2, 2);
  slots.write(2, 2);
  EXPECT_EQ(slots.rows(), 2);
  EXPECT_EQ(table(slots, 2, 3), (std::vector<std::vector<int64_t>>{{0, 2, 0}, {0, 1, 1}}));

  EXPECT_THROW(slots.write(3, 3), std::invalid_argument);  // a step of a different row count
  slots.reset();
  EXPECT_TRUE(slots.identity());
}

TEST(CacheSlots, KeepsEveryPositionAsTheTableGrows) {
  // Positions are held 16 to a row: writing past them grows the table and keeps what it held.
  CacheSlots slots;
  const std::vector<int64_t> swap = {1, 0};
  slots.reorder(swap.data(), 2, 1);  // position 0 swapped
  for (int64_t position = 1; position < 40; ++position) slots.write(2, position);
  for (int64_t position = 1; position < 40; ++position) {
    ASSERT_EQ(slots.slot(0, position), 0);
    ASSERT_EQ(slots.slot(1, position), 1);
  }
  EXPECT_EQ(slots.slot(0, 0), 1);
  EXPECT_EQ(slots.slot(1, 0), 0);
  slots.reorder(swap.data(), 2, 40);
  EXPECT_EQ(slots.slot(0, 0), 0);
  EXPECT_EQ(slots.slot(0, 39), 1);
  EXPECT_EQ(slots.slot(1, 39), 0);
}

}  // namespace
}  // namespace tfm
