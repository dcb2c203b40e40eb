#pragma once
// CRC-32 (the zip and gzip polynomial, zlib's crc32() values) for model files, checkpoints and
// prepared datasets. libdeflate's, which folds with carry-less multiplies where the CPU has them,
// about three times as fast as zlib's (BENCHMARKS.md): every start of tfm checks a model file with it.
#include <cstddef>
#include <cstdint>

namespace tfm {

/// `crc` extended over `size` bytes at `bytes`; start with 0. Any size: no 32-bit chunking needed,
/// and a null `bytes` with size 0 returns `crc` unchanged.
uint32_t crc32_of(uint32_t crc, const void* bytes, size_t size);

}  // namespace tfm
