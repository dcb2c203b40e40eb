#include "decode/inference_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "runtime/kernels.h"
#include "tests/decode/decode_test_support.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

/// Every parameter's values, detached copies, in the module's order.
std::vector<torch::Tensor> snapshot(const Transformer& model) {
  std::vector<torch::Tensor> values;
  for (const auto& parameter : model->parameters()) values.push_back(parameter.detach().clone());
  return values;
}

/// The encoder's output for one fixed source, without gradients: [1, S, D].
torch::Tensor encoded(Transformer model) {
  torch::NoGradGuard no_grad;
  return model->encode(testing::source_for({5, 9, 7, 12, 4})).memory;
}

/// The process-wide kernel choice set for a scope, the default restored after.
class KernelsForScope {
 public:
  explicit KernelsForScope(bool fused) { set_fused_kernels(fused); }
  ~KernelsForScope() { set_fused_kernels(true); }
  KernelsForScope(const KernelsForScope&) = delete;
  KernelsForScope& operator=(const KernelsForScope&) = delete;
};

TEST(InferenceModel, AModelTheCallerHoldsIsCopiedAndLeftAsItWas) {
  torch::manual_seed(3);
  Transformer model(testing::tiny_config(40, 2, 2));
  model->train();
  const auto before = snapshot(model);

  // As a translator built from a model its caller goes on training: two holders.
  const Transformer translators_handle = model;
  const Transformer ready =
      ready_for_inference(translators_handle, torch::kCPU, torch::kFloat32, /*quantize_int8=*/false,
                          /*shortlist=*/false);
  ASSERT_NE(ready.get(), model.get()) << "the caller's model was prepared in place";
  EXPECT_TRUE(model->is_training());
  EXPECT_FALSE(ready->is_training());
  const auto after = snapshot(model);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(after[i], before[i])) << "parameter " << i;

  // The copy's packed products compute what the caller's model computes.
  model->eval();
  EXPECT_TRUE(testing::tensors_near(encoded(ready), encoded(model), 1e-5));
}

TEST(InferenceModel, AModelNobodyElseHoldsIsPreparedInPlace) {
  torch::manual_seed(3);
  Transformer model(testing::tiny_config(40, 2, 2));
  const auto* const original = model.get();
  // As a model loaded only to translate: its one holder is the translator's.
  const Transformer ready = ready_for_inference(model, torch::kCPU, torch::kBFloat16,
                                                /*quantize_int8=*/false, /*shortlist=*/false);
  EXPECT_EQ(ready.get(), original) << "a sole model was copied";
  EXPECT_EQ(encoded(ready).scalar_type(), torch::kBFloat16);
}

TEST(InferenceModel, WithPlainKernelsAModelOfTheRightDtypeIsUsedAsItIs) {
  const KernelsForScope plain(false);
  torch::manual_seed(3);
  Transformer model(testing::tiny_config(40, 2, 2));
  model->eval();
  const auto expected = encoded(model);
  const Transformer ready = ready_for_inference(model, torch::kCPU, torch::kFloat32, false, false);
  EXPECT_EQ(ready.get(), model.get()) << "nothing to convert, yet a copy";
  EXPECT_TRUE(torch::equal(encoded(ready), expected));

  // Another dtype, while the caller holds it too, leaves the caller's model alone.
  ASSERT_GT(model.ptr().use_count(), 1);
  const Transformer narrow = ready_for_inference(model, torch::kCPU, torch::kBFloat16, false, false);
  EXPECT_NE(narrow.get(), model.get());
  EXPECT_EQ(model->parameters().front().scalar_type(), torch::kFloat32);
}

}  // namespace
}  // namespace tfm
