#include "train/checkpoint_average.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

#include "model/model_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"
#include "tests/train/train_test_support.h"

namespace tfm {
namespace {

using testing::ToyTask;

TEST(CheckpointAverage, EqualsTheElementWiseMean) {
  ToyTask task;
  testing::TempDir dir;
  torch::manual_seed(1);
  Transformer a(task.config);
  torch::manual_seed(2);
  Transformer b(task.config);
  save_model_file((dir / "a.pt").string(), a, task.data.tokenizer.serialized());
  save_model_file((dir / "b.pt").string(), b, task.data.tokenizer.serialized());
  const auto averaged = average_checkpoints({(dir / "a.pt").string(), (dir / "b.pt").string()});
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  for (const auto& item : averaged.model->named_parameters()) {
    EXPECT_TENSOR_NEAR(item.value(), (pa[item.key()] + pb[item.key()]) / 2, 1e-7) << item.key();
  }
  auto other = task.config;
  other.d_ff = 128;
  Transformer c(other);
  save_model_file((dir / "c.pt").string(), c, task.data.tokenizer.serialized());
  EXPECT_THROW(average_checkpoints({(dir / "a.pt").string(), (dir / "c.pt").string()}), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
