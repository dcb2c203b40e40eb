#include "model/pickle_bounds.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tfm {
namespace {

/// The error check_pickle_bounds() gives for `bytes`, or "" when it accepts them.
std::string error_of(const std::string& bytes);
/// The same for a literal, NUL bytes included.
template <size_t N>
std::string error_of(const char (&bytes)[N]) {
  return error_of(std::string(bytes, N - 1));
}

std::string error_of(const std::string& bytes) {
  try {
    check_pickle_bounds(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "m.pt");
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

TEST(PickleBounds, AcceptsWhatPicklersWrite) {
  // Python's pickle.dumps({'a': [1, 2.5, 'x', b'y', None, True]}, protocol=2), and protocol 0 text.
  EXPECT_EQ(error_of("\x80\x02}q\x00X\x01\x00\x00\x00"
                     "aq\x01]q\x02(K\x01G@\x04\x00\x00\x00\x00\x00\x00"
                     "X\x01\x00\x00\x00xq\x03"
                     "c_codecs\nencode\nq\x04X\x01\x00\x00\x00yq\x05X\x06\x00\x00"
                     "\x00latin1q\x06\x86q\x07Rq\x08N\x88"
                     "es."),
            "");
  EXPECT_EQ(error_of("(dp0\nVa\np1\n(lp2\nI1\naF2.5\nas."), "");
}

TEST(PickleBounds, RejectsNumbersPastTheRecordWithTheByteItFoundThemAt) {
  // LONG_BINPUT 0x58ffffff: a memo table of 24 GB in LibTorch's unpickler.
  const std::string memo = error_of("\x80\x02}r\xff\xff\xff\x58.");
  EXPECT_NE(memo.find("m.pt: damaged file (its pickle at byte 3 names memo entry 1493172223"), std::string::npos)
      << memo;
  EXPECT_NE(error_of("(dp99\n."), "");                                // PUT 99 in a 7-byte pickle
  const std::string length = error_of("\x80\x02X\xff\xff\xff\x7f.");  // BINUNICODE of 2 GB
  EXPECT_NE(length.find("at byte 2 asks for 2147483647 bytes past its end"), std::string::npos) << length;
  EXPECT_NE(error_of("\x80\x02\x8d\x00\x00\x00\x00\x01\x00\x00\x00."), "");  // BINUNICODE8
  EXPECT_NE(error_of("\x80\x02J\x01\x00"), "");                              // cut in BININT
  EXPECT_NE(error_of("\x80\x02\xff."), "");                                  // unknown opcode
  EXPECT_NE(error_of("\x80\x02}"), "");                                      // no STOP
  EXPECT_NE(error_of("cmodule_without_newline"), "");
}

}  // namespace
}  // namespace tfm
