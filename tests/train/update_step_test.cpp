#include "train/update_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <stdexcept>

#include "data/batching.h"
#include "model/loss.h"
#include "tests/tensor_assert.h"
#include "tests/train/train_test_support.h"
#include "text/special_ids.h"
#include "train/sub_batches.h"

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

TEST(UpdateStep, SubBatchesGiveTheWholeBatchsUpdate) {
  // Two parts side by side (whatever the thread count: each part gets a thread at least) take the
  // step the whole batch takes, to float32 rounding.
  testing::ToyTask task;
  task.config.dropout = 0;
  task.options.dtype = "float32";
  task.options.sub_batches = 1;
  const auto whole = after_one_update(task, {{0, 1, 2, 3, 4, 5}, {1, 3}});
  task.options.sub_batches = 2;
  const auto parts = after_one_update(task, {{0, 1, 2, 3, 4, 5}, {1, 3}});
  task.options.sub_batches = 3;
  const auto three = after_one_update(task, {{0, 1, 2, 3, 4, 5}, {1, 3}});
  ASSERT_EQ(parts.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_TENSOR_NEAR(parts[i], whole[i], 1e-6) << "parameter " << i;
    EXPECT_TENSOR_NEAR(three[i], whole[i], 1e-6) << "parameter " << i;
  }
}

TEST(UpdateStep, SubBatchesRepeatBitForBitWithDropout) {
  // Each part's dropout stream is seeded in part order, and the other parts' gradients are added
  // in part order: the same seed gives the same bits, however the threads interleave.
  testing::ToyTask task;
  task.config.dropout = 0.3;
  task.options.dtype = "float32";
  task.options.sub_batches = 2;
  const auto first = after_one_update(task, {{0, 1, 2, 3, 4, 5}, {2, 4, 5}});
  for (int run = 0; run < 3; ++run) {
    const auto again = after_one_update(task, {{0, 1, 2, 3, 4, 5}, {2, 4, 5}});
    for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(torch::equal(again[i], first[i])) << "parameter " << i;
  }
}

TEST(SubBatches, TokenCostsCountALayersMultiplyAddsPerPosition) {
  ModelConfig base;  // d_model 512, d_ff 2048, 6 + 6 layers
  base.vocab_size = 8000;
  const TokenCosts costs = token_costs(base);
  // Encoder layer: q, k, v, output projections and two feed-forward products; the decoder's
  // cross-attention keys and values are computed once per source position.
  EXPECT_DOUBLE_EQ(costs.source, 6.0 * (4 * 512 * 512 + 2 * 512 * 2048) + 6.0 * 2 * 512 * 512);
  // Decoder layer: self-attention's four, cross-attention's query and output, the feed-forward.
  EXPECT_DOUBLE_EQ(costs.target, 6.0 * (6 * 512 * 512 + 2 * 512 * 2048) + 512.0 * 8000);
}

TEST(SubBatches, AutoIsTwoOnACpuWithThreadsToShare) {
  EXPECT_EQ(resolve_sub_batches(0, /*cpu=*/true, 2), 2);
  EXPECT_EQ(resolve_sub_batches(0, true, 16), 2);
  EXPECT_EQ(resolve_sub_batches(0, true, 1), 1);
  EXPECT_EQ(resolve_sub_batches(0, /*cpu=*/false, 8), 1);
  EXPECT_EQ(resolve_sub_batches(2, /*cpu=*/false, 8), 1);
  EXPECT_EQ(resolve_sub_batches(3, true, 1), 3);
  EXPECT_EQ(resolve_sub_batches(1, true, 8), 1);
  EXPECT_THROW(resolve_sub_batches(-1, true, 2), std::invalid_argument);
}

TEST(SubBatches, APartsErrorReachesTheCallerAfterEveryPartIsDone) {
  testing::ToyTask task;
  Transformer model(task.config);
  SubBatches sub_batches(2, 2);
  const Batch batch = collate(task.data.train[0], {0, 1, 2, 3});
  std::atomic<int> finished{0};
  const auto loss_of = [&](const Batch& part) {
    if (part.indices.front() == 1) throw std::runtime_error("part 1 failed");  // part 1: rows 1, 3
    auto logits = model->forward(part.source, part.target_in);
    ++finished;
    return label_smoothed_cross_entropy(logits, part.target_out, 0.1, kPadId);
  };
  try {
    sub_batches.run(batch, model->parameters(), loss_of);
    FAIL() << "run() returned";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 1 failed");
  }
  EXPECT_EQ(finished, 1);
  // The thread is free again for the next batch.
  const auto all_rows = [&](const Batch& part) {
    return label_smoothed_cross_entropy(model->forward(part.source, part.target_in), part.target_out, 0.1, kPadId);
  };
  const LossSums sums = sub_batches.run(batch, model->parameters(), all_rows);
  EXPECT_GT(sums.loss.item<double>(), 0);
}

}  // namespace
}  // namespace tfm
