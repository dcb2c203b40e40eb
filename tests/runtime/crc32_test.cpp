#include "runtime/crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tfm {
namespace {

/// zlib's crc32_z, the reference: model files and datasets written by any earlier build carry its values.
uint32_t zlib_crc32(uint32_t crc, const unsigned char* bytes, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc, bytes, size));
}

std::vector<unsigned char> patterned(size_t size) {
  std::vector<unsigned char> bytes(size);
  uint32_t state = 12345;
  for (auto& byte : bytes) {
    state = state * 1664525 + 1013904223;
    byte = static_cast<unsigned char>(state >> 24);
  }
  return bytes;
}

TEST(Crc32, MatchesZlibAtEverySizeAndAlignment) {
  const auto bytes = patterned((1 << 20) + 200);
  // Sizes around the carry-less folding's 16-, 64- and 256-byte strides, and offsets off alignment.
  for (const size_t size : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{63}, size_t{64},
                            size_t{65}, size_t{255}, size_t{256}, size_t{4099}, size_t{1} << 20}) {
    for (const size_t offset : {size_t{0}, size_t{1}, size_t{7}, size_t{33}}) {
      EXPECT_EQ(crc32_of(0, bytes.data() + offset, size), zlib_crc32(0, bytes.data() + offset, size))
          << "size " << size << ", offset " << offset;
    }
  }
}

TEST(Crc32, ContinuesAcrossPiecesAsInOne) {
  const auto bytes = patterned(100000);
  const uint32_t whole = zlib_crc32(0, bytes.data(), bytes.size());
  for (const size_t cut : {size_t{1}, size_t{64}, size_t{4097}, size_t{99999}}) {
    const uint32_t first = crc32_of(0, bytes.data(), cut);
    EXPECT_EQ(crc32_of(first, bytes.data() + cut, bytes.size() - cut), whole) << "cut at " << cut;
  }
}

TEST(Crc32, NothingLeavesTheCrcAsItWas) {
  EXPECT_EQ(crc32_of(0, nullptr, 0), 0U);
  EXPECT_EQ(crc32_of(0xCBF43926U, nullptr, 0), 0xCBF43926U);
  const std::string check = "123456789";  // the CRC-32 check value of every catalogue
  EXPECT_EQ(crc32_of(0, check.data(), check.size()), 0xCBF43926U);
}

}  // namespace
}  // namespace tfm
