// The fused candidate selection against LibTorch's topk over the written-out sums.
#include "decode/beam_top_k.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void expect_as_topk(const torch::Tensor& log_probs, const torch::Tensor& beam_scores, int64_t beam, int64_t count) {
  const int64_t sentences = log_probs.size(0) / beam;
  const auto totals = (beam_scores.unsqueeze(1) + log_probs).view({sentences, -1});
  const auto [expected_scores, expected_ids] = totals.topk(count);
  const auto [scores, ids] = beam_top_k(log_probs, beam_scores, beam, count);
  ASSERT_EQ(scores.sizes(), expected_scores.sizes());
  EXPECT_TRUE(torch::equal(scores, expected_scores)) << scores << expected_scores;
  // Ids agree wherever the score is finite (-inf slots are unused and their ids arbitrary).
  const auto finite = expected_scores.isfinite();
  EXPECT_TRUE(torch::equal(ids.masked_select(finite), expected_ids.masked_select(finite))) << ids << expected_ids;
}

TEST(BeamTopK, EqualsTopkOverTheSums) {
  torch::manual_seed(11);
  for (const int64_t width : {5, 16, 37, 1000}) {
    for (const int64_t beam : {1, 2, 4}) {
      const int64_t sentences = 3;
      const auto log_probs = torch::log_softmax(torch::randn({sentences * beam, width}) * 3, -1);
      const auto beam_scores = -torch::rand({sentences * beam}) * 10;
      expect_as_topk(log_probs, beam_scores, beam, std::min<int64_t>(2 * beam, beam * width));
    }
  }
}

TEST(BeamTopK, BFloat16CellsAreReadAsFloat32) {
  torch::manual_seed(13);
  const int64_t beam = 4, sentences = 3, width = 300;
  const auto cells = (torch::randn({sentences * beam, width}) * 3).to(torch::kBFloat16);
  const auto beam_scores = -torch::rand({sentences * beam}) * 10;
  const auto totals = (beam_scores.unsqueeze(1) + cells.to(torch::kFloat32)).view({sentences, -1});
  const auto [expected_scores, expected_ids] = totals.topk(2 * beam);
  const auto [scores, ids] = beam_top_k(cells, beam_scores, beam, 2 * beam);
  EXPECT_TRUE(torch::equal(scores, expected_scores)) << scores << expected_scores;
  // bfloat16 cells tie often, and LibTorch's topk orders ties as it likes: each id must hold its score.
  EXPECT_TRUE(torch::equal(totals.gather(1, ids), scores)) << ids << expected_ids;
}

TEST(BeamTopK, EmptySlotsAndMaskedCellsNeverBeatRealCandidates) {
  torch::manual_seed(12);
  const int64_t beam = 4;
  const int64_t width = 40;
  auto log_probs = torch::log_softmax(torch::randn({2 * beam, width}), -1);
  // Sentence 0 at its first step: only beam 0 is live. Sentence 1: most cells masked.
  auto beam_scores = torch::tensor({0.0F, kNegInf, kNegInf, kNegInf, -1.0F, -2.0F, -3.0F, -4.0F});
  log_probs.narrow(0, beam, beam).narrow(1, 3, width - 3).fill_(kNegInf);
  expect_as_topk(log_probs, beam_scores, beam, 2 * beam);
  const auto [scores, ids] = beam_top_k(log_probs, beam_scores, beam, 2 * beam);
  for (int64_t i = 0; i < 2 * beam; ++i) EXPECT_LT(ids[0][i].item<int64_t>(), width);  // all from beam 0
}

TEST(BeamTopK, TiesGoToTheLowerId) {
  const auto log_probs = torch::tensor({-1.0F, -2.0F, -1.0F, -2.0F, -1.0F, -3.0F}).view({2, 3});
  const auto beam_scores = torch::zeros({2});
  const auto [scores, ids] = beam_top_k(log_probs, beam_scores, 2, 4);
  EXPECT_TRUE(torch::equal(ids, torch::tensor(std::vector<int64_t>{0, 2, 4, 1}).view({1, 4}))) << ids;
  EXPECT_TRUE(torch::equal(scores, torch::tensor({-1.0F, -1.0F, -1.0F, -2.0F}).view({1, 4})));
}

}  // namespace
}  // namespace tfm
