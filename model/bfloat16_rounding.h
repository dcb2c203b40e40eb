#pragma once
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace tfm {

/// to[i] = from[i] rounded to bfloat16 (to nearest, ties to even), i < count, on the calling
/// thread: the bits of LibTorch's float-to-bfloat16 copy for every number, without the op, which
/// for a decoding step's few rows costs more than the rounding. A NaN becomes c10::BFloat16's quiet
/// NaN (0x7FC0), where LibTorch's vectorized copy writes 0xFFFF.
void round_to_bfloat16(const float* from, c10::BFloat16* to, int64_t count);

}  // namespace tfm
