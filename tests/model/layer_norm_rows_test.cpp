#include "model/layer_norm_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include "runtime/threads.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// LayerNorm row by row in float64 with the module's weight and bias: x [N, D] -> [N, D].
torch::Tensor naive_layer_norm(const torch::Tensor& x, const torch::nn::LayerNorm& norm) {
  const auto rows = x.to(torch::kFloat64);
  const auto mean = rows.mean(-1, true);
  const auto variance = (rows - mean).pow(2).mean(-1, true);
  const double eps = norm->options.eps();
  return (rows - mean) / (variance + eps).sqrt() * norm->weight.to(torch::kFloat64) + norm->bias.to(torch::kFloat64);
}

class LayerNormRows : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  void SetUp() override {
    previous_ = at::get_num_threads();
    set_this_thread_team(2);  // the parallel path, even on one core
  }
  void TearDown() override { set_this_thread_team(previous_); }
  int previous_ = 1;
};

TEST_P(LayerNormRows, GivesTheModulesBitsFewRowsAndMany) {
  torch::manual_seed(7);
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({256}));
  torch::NoGradGuard no_grad;
  norm->weight.uniform_(0.5, 1.5);
  norm->bias.uniform_(-0.5, 0.5);
  norm->to(GetParam());
  // 4 rows: a beam's decoding step, under the grain; 200 rows: over it.
  for (const int64_t rows : {4, 200}) {
    const auto x = (torch::randn({rows, 256}) * 3 + 1).to(GetParam());
    const auto actual = layer_norm_rows(norm, x);
    EXPECT_TRUE(torch::equal(actual, norm(x))) << rows << " rows";
    EXPECT_TENSOR_NEAR(actual, naive_layer_norm(x.to(torch::kFloat64), norm).to(GetParam()),
                       GetParam() == torch::kFloat32 ? 1e-5 : 3e-2);
    EXPECT_EQ(at::get_num_threads(), 2) << "the calling thread's team is restored";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormRows, ::testing::Values(torch::kFloat32, torch::kBFloat16));

}  // namespace
}  // namespace tfm
