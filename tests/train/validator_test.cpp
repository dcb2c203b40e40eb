#include "train/validator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "data/batching.h"
#include "model/loss.h"
#include "runtime/page_pool.h"
#include "runtime/precision.h"
#include "tests/train/train_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

TEST(Validator, LossIsPerTargetTokenOverAllBatchesAndBleuIsScored) {
  testing::ToyTask task;
  task.options.dtype = "float32";  // auto would be bfloat16 on CPUs that compute it natively
  torch::manual_seed(2);
  Transformer model(task.config);
  model->train();
  const Validator validator(task.options, task.data.tokenizer, torch::kCPU);
  const ValidationResult result = validator.run(model, task.data.train[0]);
  EXPECT_TRUE(model->is_training()) << "the model is left as it was found";
  EXPECT_EQ(PagePool::shared().held_bytes(), 0U) << "the decoder's caches went back to the system";
  // The same loss computed directly over one batch of every pair.
  model->eval();
  torch::NoGradGuard no_grad;
  const Batch all = collate(task.data.train[0], {0, 1, 2, 3, 4, 5});
  const auto sums = label_smoothed_cross_entropy(model->forward(all.source, all.target_in), all.target_out,
                                                 task.options.label_smoothing, kPadId);
  EXPECT_NEAR(result.loss, sums.loss.item<double>() / all.target_tokens, 1e-5);
  EXPECT_NEAR(result.ppl, std::exp(sums.nll.item<double>() / all.target_tokens), 1e-3);
  EXPECT_EQ(result.sentences, 6);
  EXPECT_GE(result.bleu, 0.0);
  EXPECT_LE(result.bleu, 100.0);
}

// Validation computes in the training step's precision: under bfloat16 its loss is the autocast
// forward's, near float32's but not its value.
TEST(Validator, ComputesInTheTrainingStepsPrecision) {
  testing::ToyTask task;
  torch::manual_seed(2);
  Transformer model(task.config);
  task.options.dtype = "float32";
  const ValidationResult float32 =
      Validator(task.options, task.data.tokenizer, torch::kCPU).run(model, task.data.train[0]);
  task.options.dtype = "bfloat16";
  const ValidationResult bfloat16 =
      Validator(task.options, task.data.tokenizer, torch::kCPU).run(model, task.data.train[0]);
  model->eval();
  torch::NoGradGuard no_grad;
  const Batch all = collate(task.data.train[0], {0, 1, 2, 3, 4, 5});
  LossSums sums;
  {
    const AutocastGuard autocast(torch::kCPU, Precision::kBFloat16);
    sums = label_smoothed_cross_entropy(model->forward(all.source, all.target_in), all.target_out,
                                        task.options.label_smoothing, kPadId);
  }
  // Batches of a few pairs against one of all six: the same products per row, sums in another order.
  EXPECT_NEAR(bfloat16.loss, sums.loss.item<double>() / all.target_tokens, 1e-4);
  EXPECT_NE(bfloat16.loss, float32.loss);
  EXPECT_NEAR(bfloat16.loss, float32.loss, 0.02 * float32.loss);
  EXPECT_GE(bfloat16.bleu, 0.0);
  EXPECT_EQ(bfloat16.sentences, 6);
}

TEST(Validator, TheBestIsTheHighestBleuOrTheLowestLossAndPatienceCounts) {
  testing::ToyTask task;
  TrainingProgress progress;
  const Validator by_bleu(task.options, task.data.tokenizer, torch::kCPU);
  ValidationResult result;
  result.bleu = 10;
  result.loss = 3;
  EXPECT_TRUE(by_bleu.record(result, progress));  // the first is the best so far
  result.bleu = 9;
  result.loss = 2;
  EXPECT_FALSE(by_bleu.record(result, progress));
  EXPECT_EQ(progress.validations_without_improvement, 1);
  EXPECT_DOUBLE_EQ(progress.best, 10);
  task.options.best_metric = "loss";
  const Validator by_loss(task.options, task.data.tokenizer, torch::kCPU);
  TrainingProgress loss_progress;
  result.loss = 3;
  EXPECT_TRUE(by_loss.record(result, loss_progress));
  result.loss = 2.5;
  EXPECT_TRUE(by_loss.record(result, loss_progress));
  EXPECT_EQ(loss_progress.validations_without_improvement, 0);
  EXPECT_DOUBLE_EQ(loss_progress.best, 2.5);
}

}  // namespace
}  // namespace tfm
