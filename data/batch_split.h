#pragma once
#include <cstdint>
#include <vector>

#include "data/batching.h"

namespace tfm {

/// What one position of each side costs a training step, in any unit (the model's multiply-adds
/// per token, say): how split_batch weighs a part's padded source against its padded target.
struct TokenCosts {
  double source = 1;
  double target = 1;
};

/// `batch` as at most `parts` batches for threads that compute one batch side by side, each padded
/// to its own longest source and target only. A batch is sorted by source length, and its targets
/// vary more: the rows are ordered by target length (then source length, then place) and cut into
/// contiguous groups with the least largest cost, a group's cost being rows x (costs.source x its
/// longest source + costs.target x its longest target). So the parts carry less padding than the
/// batch, and take about equal time. Part order follows target length; rows within a part keep that
/// order. parts >= 1; the tensors stay on batch's device.
std::vector<Batch> split_batch(const Batch& batch, int64_t parts, const TokenCosts& costs = {});

}  // namespace tfm
