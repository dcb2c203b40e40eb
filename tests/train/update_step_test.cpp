#include "train/update_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/batching.h"
#include "tests/tensor_assert.h"
#include "tests/train/train_test_support.h"

namespace tfm {
namespace {

/// The parameters after one update over `batches` (lists of pair indices), from the same start.
std::vector<torch::Tensor> after_one_update(testing::ToyTask& task, const std::vector<std::vector<int64_t>>& batches) {
  torch::manual_seed(3);
  Transformer model(task.config);
  // A large epsilon makes Adam's first step proportional to the gradient (not its sign), so
  // rounding-level differences in tiny gradients stay rounding-level in the parameters.
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3).eps(1.0));
  UpdateStep step(model, optimizer, task.options, torch::kCPU, nullptr);
  const Shard& data = task.data.train[0];
  BatchPrefetcher prefetcher(torch::kCPU);
  prefetcher.begin_epoch(
      batches.size(), [&](size_t i) { return collate(data, batches[i]); }, 0);
  const UpdateTotals totals = step.run(prefetcher, batches.size(), 1, [] { return 0.0; });
  int64_t expected_tokens = 0;
  for (const auto& rows : batches) expected_tokens += collate(data, rows).target_tokens;
  EXPECT_EQ(totals.target_tokens, expected_tokens);
  EXPECT_GT(totals.lr, 0);
  std::vector<torch::Tensor> parameters;
  for (const auto& p : model->parameters()) parameters.push_back(p.detach().clone());
  return parameters;
}

TEST(UpdateStep, AccumulatingTwoBatchesIsOneStepOnBoth) {
  // The gradient is the per-token mean over all the update's batches, however they are split.
  testing::ToyTask task;
  task.config.dropout = 0;
  task.options.dtype = "float32";
  const auto split = after_one_update(task, {{0, 1, 2}, {3, 4, 5}});
  const auto whole = after_one_update(task, {{0, 1, 2, 3, 4, 5}});
  ASSERT_EQ(split.size(), whole.size());
  for (size_t i = 0; i < split.size(); ++i) EXPECT_TENSOR_NEAR(split[i], whole[i], 1e-6) << "parameter " << i;
  // And the step moved them (Adam's first step moves every parameter with a gradient by ~lr).
  torch::manual_seed(3);
  Transformer start(task.config);
  EXPECT_FALSE(torch::equal(start->parameters()[0], whole[0]));
}

}  // namespace
}  // namespace tfm
