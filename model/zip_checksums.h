#pragma once
// Model files and checkpoints are zip archives (LibTorch's format). Their central directory
// holds a CRC-32 for every record, but LibTorch's reader skips checking it (its miniz is built
// without CRC checks), and its unpickler trusts what it reads: a flipped bit or a cut file can
// make it throw exceptions of any type or read out of bounds. So tfm checks the archive itself
// before LibTorch opens it.
#include <string>

namespace tfm {

/// Throws std::runtime_error naming `path` unless it is a complete zip archive whose records lie
/// inside the file, whose stored (uncompressed) records all match their CRC-32s (unless
/// `checksums` is false) and whose pickles hold no length or memo index past their own size
/// (model/pickle_bounds.h). Zip64 archives (files over 4 GB) included. Reads the whole file once.
void verify_zip_checksums(const std::string& path, bool checksums = true);

}  // namespace tfm
