#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include <torch/optim/adam.h>
#include <torch/types.h>

#include "data/batch_prefetcher.h"
#include "dist/distributed_group.h"
#include "dist/gradient_buckets.h"
#include "model/bf16_weight_copies.h"
#include "model/transformer.h"
#include "train/sub_batches.h"
#include "train/train_options.h"

namespace tfm {

/// What one update did, summed over its batches (and, with several ranks, over the ranks).
struct UpdateTotals {
  torch::Tensor loss, nll;  // [] on the device: read only when a log line needs them
  int64_t target_tokens = 0, all_tokens = 0;
  double lr = 0;                 // the learning rate of the step
  double allreduce_seconds = 0;  // data parallelism: in the exchange, waiting for the slowest rank included
};

/// One optimizer step (§5.3, §5.4; Marian's GraphGroup): forward, label-smoothed loss and backward
/// over the update's batches (gradient accumulation), the gradient all-reduce over the ranks,
/// per-token scaling and clipping, the learning rate, and Adam (fused or plain).
class UpdateStep {
 public:
  /// With a `group`, gradients are summed over its ranks (which must hold equal parameters).
  UpdateStep(Transformer model, torch::optim::Adam& optimizer, const TrainOptions& options, const torch::Device& device,
             DistributedGroup* group);

  /// Update number `update` (1-based) over the next `count` batches. `budget_used()` gives the
  /// fraction of the run used, asked once the batches are done (a cool-down's rate depends on
  /// it; the ranks use their mean, since their clocks differ a little).
  UpdateTotals run(BatchPrefetcher& batches, size_t count, int64_t update, const std::function<double()>& budget_used);

 private:
  /// The optimizer's step from the summed gradients: divided by the update's target tokens,
  /// clipped, at this update's learning rate (totals.lr is set).
  void step_optimizer(UpdateTotals& totals, int64_t update, double budget);
  /// Sums this update's loss, token counts and budget over the ranks, and the gradients.
  void all_reduce(UpdateTotals& totals, double& budget);

  Transformer model_;
  torch::optim::Adam& optimizer_;
  TrainOptions options_;
  torch::Device device_;
  DistributedGroup* group_;
  std::unique_ptr<GradientBuckets> buckets_;  // with a group
  std::unique_ptr<SubBatches> sub_batches_;   // with --sub-batches 2 or more (auto: on a CPU with 2+ threads)
  Bf16WeightCopies weight_copies_;            // one cast of each weight an update, for every sub-batch
};

}  // namespace tfm
