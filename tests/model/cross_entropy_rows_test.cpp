#include "model/cross_entropy_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// The loss's gradient by the formula, in float64: scale * (softmax(z) - (1 - eps) onehot(y) - eps / V).
torch::Tensor expected_gradient(const torch::Tensor& logits, const torch::Tensor& target, const torch::Tensor& scale,
                                double epsilon) {
  const auto z = logits.to(torch::kFloat64);
  const auto onehot = torch::one_hot(target, z.size(1)).to(torch::kFloat64);
  const auto grad = torch::softmax(z, -1) - (1.0 - epsilon) * onehot - epsilon / static_cast<double>(z.size(1));
  return grad * scale.to(torch::kFloat64).unsqueeze(1);
}

TEST(CrossEntropyRows, EqualTheFormulaInFloat64) {
  torch::manual_seed(21);
  // Widths around the 16 lanes and a vocabulary-sized one.
  for (const int64_t width : {1, 15, 16, 17, 8000}) {
    const auto logits = torch::randn({6, width}) * 8.0;
    const auto target = torch::randint(0, width, {6}, torch::kLong);
    const auto rows = cross_entropy_rows(logits, target);
    const auto z = logits.to(torch::kFloat64);
    EXPECT_TENSOR_NEAR(rows.log_normalizer, torch::logsumexp(z, -1), 2e-5) << "width " << width;
    EXPECT_TENSOR_NEAR(rows.target_logit, z.gather(1, target.unsqueeze(1)).squeeze(1), 0.0) << "width " << width;
    EXPECT_TENSOR_NEAR(rows.mean_logit, z.mean(-1), 2e-5) << "width " << width;
  }
}

TEST(CrossEntropyRows, GradientEqualsTheFormula) {
  torch::manual_seed(22);
  for (const double epsilon : {0.1, 0.0}) {
    const auto logits = torch::randn({5, 333}) * 3.0;
    const auto target = torch::randint(0, 333, {5}, torch::kLong);
    const auto scale = torch::tensor({0.5F, 1.0F, 0.0F, 2.0F, 1.0F});  // row 2 is a pad
    const auto rows = cross_entropy_rows(logits, target);
    const auto grad = cross_entropy_gradient(logits, target, rows.log_normalizer, scale, epsilon);
    EXPECT_EQ(grad.scalar_type(), torch::kFloat32);
    EXPECT_TENSOR_NEAR(grad, expected_gradient(logits, target, scale, epsilon), 1e-6) << "epsilon " << epsilon;
    EXPECT_EQ(grad[2].abs().sum().item<double>(), 0.0) << "a pad row gets no gradient";
  }
}

TEST(CrossEntropyRows, BFloat16LogitsAreReadAndWrittenInTheirDtype) {
  torch::manual_seed(23);
  const auto logits = (torch::randn({4, 500}) * 4.0).to(torch::kBFloat16);
  const auto target = torch::randint(0, 500, {4}, torch::kLong);
  const auto scale = torch::tensor({1.0F, 0.25F, 1.0F, 3.0F});
  const auto rows = cross_entropy_rows(logits, target);
  EXPECT_TENSOR_NEAR(rows.log_normalizer, torch::logsumexp(logits.to(torch::kFloat64), -1), 2e-5);
  const auto grad = cross_entropy_gradient(logits, target, rows.log_normalizer, scale, 0.1);
  EXPECT_EQ(grad.scalar_type(), torch::kBFloat16);
  // Computed in float32 and rounded once: within half a bfloat16 ulp (2^-9 relative) of the formula.
  const auto expected = expected_gradient(logits, target, scale, 0.1);
  const auto error = (grad.to(torch::kFloat64) - expected).abs();
  EXPECT_LE((error - expected.abs() * (1.0 / 256.0) - 1e-7).max().item<double>(), 0.0);
}

TEST(CrossEntropyRows, OnePassGivesTheReductionsOfTheTwoAndTheirGradient) {
  // Training writes the gradient in the forward pass, row by row after its reductions, from the
  // exponentials the normalizer summed: the reductions' bits, and the gradient of the two calls to
  // within a few float roundings before the gradient's own rounding, pad rows included.
  torch::manual_seed(24);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (const int64_t width : {17, 8000}) {
      const auto logits = (torch::randn({7, width}) * 4.0).to(dtype);
      const auto target = torch::randint(0, width, {7}, torch::kLong);
      const auto scale = torch::tensor({1.0F, 1.0F, 0.0F, 1.0F, 0.5F, 1.0F, 1.0F});
      torch::Tensor gradient;
      const auto together = cross_entropy_rows_and_gradient(logits, target, scale, 0.1, gradient);
      const auto apart = cross_entropy_rows(logits, target);
      EXPECT_TRUE(torch::equal(together.log_normalizer, apart.log_normalizer));
      EXPECT_TRUE(torch::equal(together.target_logit, apart.target_logit));
      EXPECT_TRUE(torch::equal(together.mean_logit, apart.mean_logit));
      const auto two_calls = cross_entropy_gradient(logits, target, apart.log_normalizer, scale, 0.1);
      // The softmax values (at most 1) differ by a few float ulps, before the subtraction of the
      // smoothing and the rounding to the dtype (one of its ulps).
      const double rounding = dtype == torch::kFloat32 ? 0.0 : 1.0 / (1 << 7);
      const auto expected = two_calls.to(torch::kFloat64);
      const auto error = (gradient.to(torch::kFloat64) - expected).abs();
      const auto allowed = 8.0 / (1 << 24) + expected.abs() * rounding;
      EXPECT_LE((error - allowed).max().item<double>(), 0.0) << "width " << width;
      EXPECT_TRUE(torch::equal(gradient[2], torch::zeros({width}, gradient.options()))) << "a pad row is zero";
      if (dtype == torch::kBFloat16) {
        EXPECT_GT(torch::eq(gradient, two_calls).to(torch::kFloat32).mean().item<double>(), 0.9)
            << "most bfloat16 values the same bits";
      }
    }
  }
}

}  // namespace
}  // namespace tfm
