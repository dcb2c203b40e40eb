#pragma once
#include <cstdint>
#include <vector>

#include "data/batching.h"

namespace tfm {

/// `batch` as `parts` batches for threads that compute one batch side by side: part p has rows p,
/// p + parts, p + 2 parts, ... in order, padded to its own longest source and target only. A
/// batch's rows come sorted by length, so the parts get nearly equal tokens. With fewer rows than
/// `parts`, one part per row. parts >= 1; the tensors stay on batch's device.
std::vector<Batch> split_batch(const Batch& batch, int64_t parts);

}  // namespace tfm
