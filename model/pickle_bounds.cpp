#include "model/pickle_bounds.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace tfm {
namespace {

/// How an opcode's argument is laid out (Python's Lib/pickletools.py, protocols 0-5).
enum class Argument {
  kNone,
  kFixed,      // `width` bytes
  kLength,     // a little-endian length of `width` bytes, then that many bytes
  kLine,       // bytes up to a newline
  kTwoLines,   // two newline-terminated lines (GLOBAL, INST)
  kMemoFixed,  // a memo index of `width` bytes (BINGET, BINPUT, LONG_BINGET, LONG_BINPUT)
  kMemoLine,   // a memo index as decimal text up to a newline (GET, PUT)
};

struct Opcode {
  Argument argument = Argument::kNone;
  int width = 0;
  bool known = false;
};

constexpr Opcode op(Argument argument, int width = 0) { return {argument, width, true}; }

/// The opcode table, indexed by the opcode byte.
struct Table {
  Opcode codes[256] = {};
  Table() {
    for (const unsigned char c :
         {'(', '.', '0', '1', '2', 'N', 'R', 'a', 'b', 'd', '}', 'e', 'l', ']', 'o', 's', 't', ')', 'u', 'Q'}) {
      codes[c] = op(Argument::kNone);
    }
    for (const unsigned char c : {0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x97, 0x98}) {
      codes[c] = op(Argument::kNone);  // NEWOBJ, TUPLE1-3, NEWTRUE/FALSE, EMPTY_SET ... MEMOIZE, buffers
    }
    codes['J'] = op(Argument::kFixed, 4);    // BININT
    codes['K'] = op(Argument::kFixed, 1);    // BININT1
    codes['M'] = op(Argument::kFixed, 2);    // BININT2
    codes['G'] = op(Argument::kFixed, 8);    // BINFLOAT
    codes[0x80] = op(Argument::kFixed, 1);   // PROTO
    codes[0x82] = op(Argument::kFixed, 1);   // EXT1
    codes[0x83] = op(Argument::kFixed, 2);   // EXT2
    codes[0x84] = op(Argument::kFixed, 4);   // EXT4
    codes[0x95] = op(Argument::kFixed, 8);   // FRAME
    codes['T'] = op(Argument::kLength, 4);   // BINSTRING
    codes['U'] = op(Argument::kLength, 1);   // SHORT_BINSTRING
    codes['X'] = op(Argument::kLength, 4);   // BINUNICODE
    codes[0x8c] = op(Argument::kLength, 1);  // SHORT_BINUNICODE
    codes[0x8d] = op(Argument::kLength, 8);  // BINUNICODE8
    codes['B'] = op(Argument::kLength, 4);   // BINBYTES
    codes['C'] = op(Argument::kLength, 1);   // SHORT_BINBYTES
    codes[0x8e] = op(Argument::kLength, 8);  // BINBYTES8
    codes[0x96] = op(Argument::kLength, 8);  // BYTEARRAY8
    codes[0x8a] = op(Argument::kLength, 1);  // LONG1
    codes[0x8b] = op(Argument::kLength, 4);  // LONG4
    for (const unsigned char c : {'I', 'L', 'F', 'S', 'V', 'P'}) codes[c] = op(Argument::kLine);
    codes['c'] = op(Argument::kTwoLines);      // GLOBAL
    codes['i'] = op(Argument::kTwoLines);      // INST
    codes['h'] = op(Argument::kMemoFixed, 1);  // BINGET
    codes['q'] = op(Argument::kMemoFixed, 1);  // BINPUT
    codes['j'] = op(Argument::kMemoFixed, 4);  // LONG_BINGET
    codes['r'] = op(Argument::kMemoFixed, 4);  // LONG_BINPUT
    codes['g'] = op(Argument::kMemoLine);      // GET
    codes['p'] = op(Argument::kMemoLine);      // PUT
  }
};

uint64_t little_endian(const unsigned char* p, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = value << 8 | p[i];
  return value;
}

}  // namespace

void check_pickle_bounds(const unsigned char* bytes, size_t size, const std::string& origin) {
  static const Table table;
  const auto damaged = [&](size_t at, const std::string& what) {
    throw std::runtime_error(origin + ": damaged file (its pickle at byte " + std::to_string(at) + " " + what + ")");
  };
  // Bytes from `at` to the next newline, newline included; damaged() if there is none.
  const auto line_end = [&](size_t at) {
    const void* newline = std::memchr(bytes + at, '\n', size - at);
    if (newline == nullptr) damaged(at, "has a text argument without its end");
    return static_cast<size_t>(static_cast<const unsigned char*>(newline) - bytes) + 1;
  };
  for (size_t at = 0; at < size;) {
    const unsigned char code = bytes[at];
    const Opcode& opcode = table.codes[code];
    if (!opcode.known) damaged(at, "holds an unknown opcode " + std::to_string(code));
    const size_t start = at++;
    if (code == '.') return;  // STOP
    const size_t left = size - at;
    switch (opcode.argument) {
      case Argument::kNone: break;
      case Argument::kFixed:
        if (left < static_cast<size_t>(opcode.width)) damaged(start, "ends inside an argument");
        at += opcode.width;
        break;
      case Argument::kLength: {
        if (left < static_cast<size_t>(opcode.width)) damaged(start, "ends inside a length");
        const uint64_t length = little_endian(bytes + at, opcode.width);
        at += opcode.width;
        if (length > size - at) damaged(start, "asks for " + std::to_string(length) + " bytes past its end");
        at += length;
        break;
      }
      case Argument::kLine: at = line_end(at); break;
      case Argument::kTwoLines: at = line_end(line_end(at)); break;
      case Argument::kMemoFixed: {
        if (left < static_cast<size_t>(opcode.width)) damaged(start, "ends inside a memo index");
        const uint64_t index = little_endian(bytes + at, opcode.width);
        if (index >= size) damaged(start, "names memo entry " + std::to_string(index) + ", more than it can hold");
        at += opcode.width;
        break;
      }
      case Argument::kMemoLine: {
        const size_t end = line_end(at);
        const std::string text(reinterpret_cast<const char*>(bytes + at), end - at - 1);
        if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos ||
            std::stoull(text) >= size) {
          damaged(start, "names a memo entry it cannot hold");
        }
        at = end;
        break;
      }
    }
  }
  damaged(size, "ends without STOP");
}

}  // namespace tfm
