#pragma once
// LibTorch's unpickler trusts the numbers inside a pickle: a memo index of 1.5 billion makes it
// grow its memo table to 24 GB before anything else is read, a string length past the record's
// end makes it allocate that much. A file crafted with correct zip checksums reaches it, so the
// pickles in a model file are walked here first, opcode by opcode, without building anything.
#include <cstddef>
#include <string>

namespace tfm {

/// Throws std::runtime_error naming `origin` unless `bytes` is a sequence of pickle opcodes
/// (protocols 0-5) ending in STOP, in which every length fits in the bytes that remain and every
/// memo index is below the record's size (so the memo table LibTorch grows stays within
/// 16 bytes per byte of pickle).
void check_pickle_bounds(const unsigned char* bytes, size_t size, const std::string& origin);

}  // namespace tfm
