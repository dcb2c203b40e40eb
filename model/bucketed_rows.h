#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// Row counts a product is padded to where oneDNN builds its kernels for each shape: `rows`
/// rounded up to a multiple of the smallest power of two `step` with rows <= 32 x step (rows
/// 1,025-2,048 -> a multiple of 64), i.e. 16 counts per doubling. Fewer than rows / 16 rows are
/// added (~2% on average); up to 32 rows, none. `tfm serve`'s PackedWeight::padded_rows is coarser,
/// for small decoding batches.
///
/// Why: under bf16 autocast on the CPU every linear layer's forward, input-gradient and
/// weight-gradient products go through oneDNN, which JIT-builds a primitive per shape (0.3-0.5 ms),
/// and token-count batches give nearly every batch new row counts: ~50 new primitives an update,
/// ~7% of a small model's training time. With the counts bucketed, a bounded primitive cache
/// (kTrainingPrimitiveCacheCapacity) keeps every shape a run meets (BENCHMARKS.md).
int64_t bucketed_row_count(int64_t rows);

/// Whether products of `x` are built by oneDNN per row count and so worth bucketing: x on the
/// CPU while bf16 autocast is on there (training's and validation's forward passes).
bool buckets_product_rows(const torch::Tensor& x);

}  // namespace tfm
