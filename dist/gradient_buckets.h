#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "dist/distributed_group.h"

namespace tfm {

/// Data-parallel gradient exchange: the parameters' gradients travel in a few flat buffers of
/// about `bucket_bytes` each (PyTorch DDP's 25 MB by default) instead of one collective per
/// parameter, whose fixed cost would dominate for the many small LayerNorm and bias tensors.
class GradientBuckets {
 public:
  /// Parameters grouped in their order, by device and dtype; a parameter listed twice (tied
  /// embeddings) is exchanged once.
  explicit GradientBuckets(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes = 25 << 20);

  /// Sums every parameter's gradient over the ranks, in place. A rank with no gradient for a
  /// parameter (it saw no batch this update) contributes zeros and receives the sum.
  void all_reduce(DistributedGroup& group);

  size_t bucket_count() const { return buckets_.size(); }
  /// Elements exchanged per update (the all-reduce volume is this times the element size).
  int64_t elements() const;

 private:
  struct Bucket {
    std::vector<torch::Tensor> parameters;
    torch::Tensor flat;  // [sum of numel], the parameters' dtype and device
  };
  std::vector<Bucket> buckets_;
};

}  // namespace tfm
