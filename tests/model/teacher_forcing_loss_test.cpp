#include "model/teacher_forcing_loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

#include "model/bucketed_rows.h"
#include "runtime/precision.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// The loss and every parameter's gradient of `loss_of(model)`.
std::pair<LossSums, std::vector<torch::Tensor>> loss_and_gradients(Transformer& model,
                                                                   const std::function<LossSums()>& loss_of) {
  model->zero_grad();
  const LossSums sums = loss_of();
  sums.loss.backward();
  std::vector<torch::Tensor> gradients;
  for (const auto& parameter : model->parameters()) gradients.push_back(parameter.grad().clone());
  return {sums, gradients};
}

TEST(TeacherForcingLoss, ProjectingOnlyTheTokensEqualsProjectingEveryPosition) {
  // The fused path projects the target positions that hold a token; the loss and every gradient
  // must equal those of the whole [B, T, V] projection, whose padding gets zero gradient.
  torch::manual_seed(4);
  for (const bool untied : {false, true}) {
    auto config = testing::tiny_model_config();
    config.tie_embeddings = !untied;
    config.dropout = 0.0;  // both passes must see the same network
    Transformer model(config);
    model->train();
    const auto source = torch::randint(kNumSpecialIds, 23, {3, 7}, torch::kLong);
    auto target_in = torch::randint(kNumSpecialIds, 23, {3, 6}, torch::kLong);
    auto target_out = torch::randint(kNumSpecialIds, 23, {3, 6}, torch::kLong);
    target_out.index_put_({1, torch::indexing::Slice(3)}, kPadId);  // rows of different lengths
    target_out.index_put_({2, torch::indexing::Slice(1)}, kPadId);
    target_in.index_put_({2, torch::indexing::Slice(2)}, kPadId);
    target_in.index_put_({0, 5}, kPadId);  // what the loss counts is target_out's tokens, not target_in's
    const auto [selected, selected_gradients] = loss_and_gradients(
        model, [&] { return teacher_forcing_loss(model, source, target_in, target_out, 0.1, kPadId); });
    const auto [whole, whole_gradients] = loss_and_gradients(model, [&] {
      return label_smoothed_cross_entropy(model->forward(source, target_in), target_out, 0.1, kPadId);
    });
    EXPECT_NEAR(selected.loss.item<double>(), whole.loss.item<double>(), 1e-5);
    EXPECT_NEAR(selected.nll.item<double>(), whole.nll.item<double>(), 1e-5);
    ASSERT_EQ(selected_gradients.size(), whole_gradients.size());
    for (size_t i = 0; i < whole_gradients.size(); ++i) {
      EXPECT_TENSOR_NEAR(selected_gradients[i], whole_gradients[i], 1e-6);
    }
  }
}

TEST(TeacherForcingLoss, BucketedRowsUnderBFloat16AutocastAddNoLossAndNoGradient) {
  // Under bf16 autocast the 41 target tokens are projected as 42 rows (model/bucketed_rows.h); the
  // added row must add nothing, so the loss and gradients stay those of projecting every position.
  torch::manual_seed(6);
  auto config = testing::tiny_model_config();
  config.dropout = 0.0;
  Transformer model(config);
  model->train();
  const auto source = torch::randint(kNumSpecialIds, 23, {5, 7}, torch::kLong);
  const auto target_in = torch::randint(kNumSpecialIds, 23, {5, 9}, torch::kLong);
  auto target_out = torch::randint(kNumSpecialIds, 23, {5, 9}, torch::kLong);
  target_out.index_put_({3, torch::indexing::Slice(5)}, kPadId);  // 45 - 4 = 41 tokens
  ASSERT_EQ(bucketed_row_count(41), 42);
  const AutocastGuard bfloat16(torch::kCPU, Precision::kBFloat16);
  const auto [selected, selected_gradients] = loss_and_gradients(
      model, [&] { return teacher_forcing_loss(model, source, target_in, target_out, 0.1, kPadId); });
  const auto [whole, whole_gradients] = loss_and_gradients(
      model, [&] { return label_smoothed_cross_entropy(model->forward(source, target_in), target_out, 0.1, kPadId); });
  EXPECT_NEAR(selected.loss.item<double>(), whole.loss.item<double>(), 1e-3 * whole.loss.item<double>());
  EXPECT_NEAR(selected.nll.item<double>(), whole.nll.item<double>(), 1e-3 * whole.nll.item<double>());
  ASSERT_EQ(selected_gradients.size(), whole_gradients.size());
  for (size_t i = 0; i < whole_gradients.size(); ++i) {
    EXPECT_TENSOR_NEAR(selected_gradients[i], whole_gradients[i], 0.02 * whole_gradients[i].abs().max().item<double>())
        << "parameter " << i;
  }
}

}  // namespace
}  // namespace tfm
