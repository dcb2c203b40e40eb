#include "train/validator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "data/batching.h"
#include "model/loss.h"
#include "tests/train/train_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

TEST(Validator, LossIsPerTargetTokenOverAllBatchesAndBleuIsScored) {
  testing::ToyTask task;
  torch::manual_seed(2);
  Transformer model(task.config);
  model->train();
  const Validator validator(task.options, task.data.tokenizer, torch::kCPU);
  const ValidationResult result = validator.run(model, task.data.train[0]);
  EXPECT_TRUE(model->is_training()) << "the model is left as it was found";
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
