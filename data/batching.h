#pragma once
// Batches by token count (§5.1: "each training batch contained a set of sentence pairs containing
// approximately 25000 source tokens and 25000 target tokens"), as fairseq's --max-tokens.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/shard.h"

namespace tfm {

/// How make_batches groups pairs.
struct BatchingOptions {
  int64_t max_tokens = 4096;  // bound on each side's padded size: sentences x (longest + 1)
  int64_t max_sentences = 0;  // 0 = no limit
  uint64_t seed = 1;          // with the epoch, fixes the batch order and composition
};

/// Throws std::invalid_argument naming the flag for a bad value.
void validate(const BatchingOptions& options);

/// Every pair in exactly one batch; each batch's padded size on each side, counting the eos/bos the
/// collated tensors add (source len+1, target len+1), times the batch's sentence count, is <= max_tokens.
/// Length-bucketed (pairs sorted by source then target length, ties in a random order that changes
/// with the epoch, then cut greedily into the largest batches that fit), then batches shuffled
/// deterministically from (seed, epoch, stream): the same arguments give the same batches on any
/// machine. `stream` tells apart the shards of one epoch (0 gives what a single shard always got).
/// Throws std::invalid_argument naming the pair when a single pair cannot fit in max_tokens, and
/// std::runtime_error when a length exceeds the shard's recorded longest (a damaged file).
std::vector<std::vector<int64_t>> make_batches(const Shard& data, const BatchingOptions& options, int64_t epoch,
                                               uint64_t stream = 0);

/// make_batches' batches in a compact form (4 bytes a pair): the length-sorted rows, where each
/// batch starts among them, and the batches' shuffled order. What training holds for a shard.
struct BatchPlan {
  std::vector<uint32_t> rows;     // shard rows, sorted by length
  std::vector<size_t> starts{0};  // batch k is rows[starts[k] .. starts[k + 1])
  std::vector<size_t> order;      // the epoch's b-th batch is batch order[b]
  size_t size() const;
  /// The epoch's b-th batch (make_batches(...)[b]).
  std::vector<int64_t> batch(size_t b) const;
};
BatchPlan plan_batches(const Shard& data, const BatchingOptions& options, int64_t epoch, uint64_t stream = 0);

/// What make_batches would give, without building it: the same in every epoch, since the cut
/// depends only on the sorted lengths.
struct BatchingStats {
  size_t batches = 0;
  int64_t tokens = 0;         // non-pad, both sides, eos/bos counted
  int64_t padded_tokens = 0;  // both sides
  /// tokens / padded_tokens (1 when empty).
  double padding_efficiency() const;
};
BatchingStats batching_stats(const Shard& data, const BatchingOptions& options);

/// One batch as tensors (on the CPU), B = sentences, S/T = longest source/target + 1.
struct Batch {
  torch::Tensor source;                          // [B, S] int64: tokens + eos, right-padded with kPadId
  torch::Tensor target_in;                       // [B, T] int64: bos + tokens, padded
  torch::Tensor target_out;                      // [B, T] int64: tokens + eos, padded
  int64_t source_tokens = 0, target_tokens = 0;  // non-pad counts (target counts target_out)
  std::vector<int64_t> indices;                  // shard rows, in batch order
};

/// The tensors of pairs `indices` (in that order). Throws std::invalid_argument when `indices` is
/// empty or names a pair outside the shard, std::runtime_error for a damaged shard (Shard::read_pair).
Batch collate(const Shard& data, const std::vector<int64_t>& indices);

/// "a batch of B sentences, S source x T target positions (B*S and B*T padded tokens)": what an
/// error that depends on the batch's size says of it.
std::string describe(const Batch& batch);

/// non-pad tokens / padded tokens over all batches, both sides (eos/bos counted as non-pad).
double padding_efficiency(const Shard& data, const std::vector<std::vector<int64_t>>& batches);

}  // namespace tfm
