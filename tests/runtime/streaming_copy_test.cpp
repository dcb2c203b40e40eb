#include "runtime/streaming_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

namespace tfm {
namespace {

/// Copies `bytes` from offset `from_offset` of a patterned buffer to offset `to_offset` of a
/// zeroed one and checks every byte, including the guard bytes around the destination.
void expect_copies(size_t bytes, size_t from_offset, size_t to_offset) {
  SCOPED_TRACE("bytes " + std::to_string(bytes) + ", from +" + std::to_string(from_offset) + ", to +" +
               std::to_string(to_offset));
  alignas(64) static uint8_t source[4096 + 64];
  alignas(64) static uint8_t target[4096 + 128];
  for (size_t i = 0; i < sizeof(source); ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
  std::fill(std::begin(target), std::end(target), uint8_t{0});
  streaming_copy(target + to_offset, source + from_offset, bytes);
  streaming_fence();
  for (size_t i = 0; i < sizeof(target); ++i) {
    const bool inside = i >= to_offset && i < to_offset + bytes;
    const uint8_t expected = inside ? source[from_offset + (i - to_offset)] : 0;
    ASSERT_EQ(target[i], expected) << "byte " << i;
  }
}

TEST(StreamingCopy, CopiesWholeLinesFromAnyOffset) {
  for (const size_t bytes : {size_t{64}, size_t{128}, size_t{2048}, size_t{4096}}) {
    for (const size_t from_offset : {size_t{0}, size_t{4}, size_t{16}, size_t{33}})
      expect_copies(bytes, from_offset, 0);
  }
}

TEST(StreamingCopy, CopiesPartLinesAndOddSizes) {
  // 16-byte multiples that are not whole 64-byte lines take the tail loop; other sizes and
  // destinations off 16 bytes take memcpy. Each must copy exactly its bytes.
  for (const size_t bytes : {size_t{0}, size_t{16}, size_t{48}, size_t{80}, size_t{1}, size_t{15}, size_t{100}}) {
    expect_copies(bytes, 0, 16);
    expect_copies(bytes, 5, 64);
  }
  for (const size_t to_offset : {size_t{1}, size_t{8}, size_t{24}}) expect_copies(256, 0, to_offset);
}

}  // namespace
}  // namespace tfm
