// A large batch's self-attention caches, which outgrow the CPU's caches and are gathered with
// streaming stores (runtime/streaming_copy.h) as they grow and as beams move, decode as the same
// sentence does alone in a small state, whose caches are copied with ordinary stores.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "model/decoder_state.h"
#include "model/transformer.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// Each block of `beam` rows reorders as `within` says (a beam's moves inside its sentence).
torch::Tensor blockwise(const std::vector<int64_t>& within, int64_t blocks) {
  std::vector<int64_t> rows;
  const auto beam = static_cast<int64_t>(within.size());
  for (int64_t b = 0; b < blocks; ++b) {
    for (const int64_t r : within) rows.push_back(b * beam + r);
  }
  return torch::tensor(rows, torch::kLong);
}

TEST(LargeCaches, DecodeAsALoneSentence) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  Transformer model(testing::tiny_model_config());  // d_model 16: a row's keys are 64 bytes
  model->eval();
  constexpr int64_t kBeam = 4;
  // 1024 copies of one sentence: 4096 rows, so that a layer's cache of 4 positions is 1 MiB, the
  // size from which caches are gathered with streaming stores (model/decoder_state.cpp).
  constexpr int64_t kSentences = 1024;
  const auto sentence = torch::randint(kNumSpecialIds, 23, {1, 7}, torch::kLong);
  auto large = model->start_decoding(model->encode(sentence.repeat({kSentences, 1})));
  auto lone = model->start_decoding(model->encode(sentence));
  large.repeat_rows(kBeam);
  lone.repeat_rows(kBeam);
  const std::vector<std::vector<int64_t>> moves{{1, 0, 2, 2}, {3, 3, 0, 1}, {0, 0, 0, 2}, {2, 1, 3, 0}};
  for (int64_t step = 0; step < 10; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<int64_t> beam_tokens(kBeam);
    for (int64_t r = 0; r < kBeam; ++r) beam_tokens[r] = step == 0 ? kBosId : kNumSpecialIds + (step * 5 + r * 3) % 19;
    const auto tokens = torch::tensor(beam_tokens, torch::kLong);
    const auto large_logits = model->step(tokens.repeat({kSentences}), large);  // [4096, V]
    const auto lone_logits = model->step(tokens, lone);                         // [4, V]
    for (const int64_t block : {int64_t{0}, kSentences / 2, kSentences - 1}) {
      ASSERT_TENSOR_NEAR(large_logits.narrow(0, block * kBeam, kBeam), lone_logits, 1e-5);
    }
    // Beams move for the first steps only, so that later growths gather caches without a table too.
    if (step < 4) {
      const auto& move = moves[static_cast<size_t>(step)];
      large.reorder(blockwise(move, kSentences), /*same_memory=*/true);
      lone.reorder(blockwise(move, 1), /*same_memory=*/true);
    }
  }
  EXPECT_GE(large.layers.front().self_k.nbytes(), size_t{1} << 20);  // the streamed gathers ran
}

}  // namespace
}  // namespace tfm
