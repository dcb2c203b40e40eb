// Continuous batching in the model: sentences that join a running decoding state
// (DecoderState::append) score as they do decoded alone, through reorders, drops and later joins.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>
#include <vector>

#include "model/decoder_state.h"
#include "model/transformer.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

using testing::tiny_model_config;

/// Random real tokens (ids >= 4); the second sentence of a pair is padded by one.
torch::Tensor random_source(int64_t batch, int64_t length, int64_t seed) {
  torch::manual_seed(seed);
  auto ids = torch::randint(kNumSpecialIds, 23, {batch, length}, torch::kLong);
  if (batch > 1) ids.index_put_({1, length - 1}, kPadId);
  return ids;
}

/// Beam search's layout: each sentence's rows repeated `beam` times, sharing one encoder output.
DecoderState started(Transformer& model, const torch::Tensor& source, int64_t beam) {
  auto state = model->start_decoding(model->encode(source));
  state.repeat_rows(beam);
  return state;
}

torch::Tensor tokens(std::vector<int64_t> ids) { return torch::tensor(ids, torch::kLong); }

void expect_joined_rows_decode_as_alone(const ModelConfig& config,
                                        std::optional<torch::Dtype> cache_dtype = std::nullopt) {
  torch::manual_seed(7);
  Transformer model(config);
  model->eval();
  model->set_cache_dtype(cache_dtype);
  const int64_t beam = 2;
  const auto first = random_source(2, 6, 1);   // 4 rows
  const auto second = random_source(1, 9, 2);  // longer: the running memory is padded to it
  const auto third = random_source(1, 4, 3);

  auto running = started(model, first, beam);
  auto first_alone = started(model, first, beam);
  for (const auto& next : {tokens({kBosId, kBosId, kBosId, kBosId}), tokens({5, 6, 7, 8})}) {
    ASSERT_TENSOR_NEAR(model->step(next, running), model->step(next, first_alone), 1e-5);
  }

  running.append(started(model, second, beam));  // rows 4, 5 begin at position 2
  auto second_alone = started(model, second, beam);
  ASSERT_EQ(running.rows(), 6);
  EXPECT_EQ(running.next_positions(), (std::vector<int64_t>{2, 2, 2, 2, 0, 0}));
  auto joined = model->step(tokens({9, 10, 11, 12, kBosId, kBosId}), running);  // [6, V]
  EXPECT_TENSOR_NEAR(joined.narrow(0, 0, 4), model->step(tokens({9, 10, 11, 12}), first_alone), 1e-5);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 4, 2), model->step(tokens({kBosId, kBosId}), second_alone), 1e-5);

  // Beams move within their sentences, then the first sentence of the batch finishes.
  running.reorder(tokens({1, 0, 2, 2, 5, 4}), /*same_memory=*/true);
  first_alone.reorder(tokens({1, 0, 2, 2}), /*same_memory=*/true);
  second_alone.reorder(tokens({1, 0}), /*same_memory=*/true);
  joined = model->step(tokens({13, 14, 15, 16, 17, 18}), running);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 0, 4), model->step(tokens({13, 14, 15, 16}), first_alone), 1e-5);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 4, 2), model->step(tokens({17, 18}), second_alone), 1e-5);
  running.reorder(tokens({2, 3, 4, 5}));
  first_alone.reorder(tokens({2, 3}));
  joined = model->step(tokens({19, 20, 21, 22}), running);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 0, 2), model->step(tokens({19, 20}), first_alone), 1e-5);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 2, 2), model->step(tokens({21, 22}), second_alone), 1e-5);

  // Every row now began at 2 or later: a join drops the positions no row reads.
  running.reorder(tokens({2, 3}));
  running.append(started(model, third, beam));
  auto third_alone = started(model, third, beam);
  EXPECT_EQ(running.next_positions(), (std::vector<int64_t>{3, 3, 0, 0}));
  EXPECT_EQ(running.step, 3);
  joined = model->step(tokens({5, 6, kBosId, kBosId}), running);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 0, 2), model->step(tokens({5, 6}), second_alone), 1e-5);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 2, 2), model->step(tokens({kBosId, kBosId}), third_alone), 1e-5);
  joined = model->step(tokens({7, 8, 9, 10}), running);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 0, 2), model->step(tokens({7, 8}), second_alone), 1e-5);
  EXPECT_TENSOR_NEAR(joined.narrow(0, 2, 2), model->step(tokens({9, 10}), third_alone), 1e-5);
  EXPECT_EQ(running.layers.front().self_k.scalar_type(), cache_dtype.value_or(torch::kFloat32));
  EXPECT_EQ(running.layers.back().memory_k.scalar_type(), cache_dtype.value_or(torch::kFloat32));
}

/// Fused kernels on (the one-pass step attention, outside autograd) and off (LibTorch's matmuls).
class JoinedRows : public testing::BothKernelsTest {};
INSTANTIATE_BOTH_KERNELS(JoinedRows);

TEST_P(JoinedRows, DecodeAsAlone) {
  for (const bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "in autograd" : "outside autograd");
    torch::AutoGradMode mode(grad);
    expect_joined_rows_decode_as_alone(tiny_model_config());
  }
}

TEST_P(JoinedRows, DecodeAsAloneWithBFloat16Caches) {
  // int8 decoding's caches: joined and lone rows read the same rounded keys and values.
  for (const bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "in autograd" : "outside autograd");
    torch::AutoGradMode mode(grad);
    expect_joined_rows_decode_as_alone(tiny_model_config(), torch::kBFloat16);
  }
}

TEST_P(JoinedRows, DecodeAsAloneWithVariants) {
  torch::NoGradGuard no_grad;
  for (const auto& config : testing::decoding_variants()) expect_joined_rows_decode_as_alone(config);
}

TEST(JoinedRows, RefusesAStateThatHasDecoded) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(7);
  Transformer model(tiny_model_config());
  model->eval();
  auto running = started(model, random_source(1, 5, 1), 1);
  auto stepped = started(model, random_source(1, 5, 2), 1);
  model->step(tokens({kBosId}), stepped);
  EXPECT_THROW(running.append(std::move(stepped)), c10::Error);
  EXPECT_THROW(running.append(started(model, random_source(1, 5, 3), 2)), c10::Error);  // other rows per memory
}

}  // namespace
}  // namespace tfm
