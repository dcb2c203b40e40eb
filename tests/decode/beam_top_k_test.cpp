// The fused candidate selection against LibTorch's topk over the written-out sums.
#include "decode/beam_top_k.h"

#include "model/log_normalizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace tfm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void expect_as_topk(const torch::Tensor& log_probs, const torch::Tensor& beam_scores, int64_t beam, int64_t count,
                    const torch::Tensor& block_maxima = {}) {
  const int64_t sentences = log_probs.size(0) / beam;
  const auto totals = (beam_scores.unsqueeze(1) + log_probs).view({sentences, -1});
  const auto [expected_scores, expected_ids] = totals.topk(count);
  const auto [scores, ids] = beam_top_k(log_probs, beam_scores, beam, count, block_maxima);
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

TEST(BeamTopK, BlockMaximaSkipOnlyBlocksThatCannotEnter) {
  torch::manual_seed(14);
  const int64_t beam = 4, sentences = 3;
  for (const int64_t width : {int64_t{40}, 3 * kLogitBlock + 17}) {
    auto log_probs = torch::log_softmax(torch::randn({sentences * beam, width}) * 3, -1);
    log_probs[5].fill_(-std::numeric_limits<float>::infinity());  // a masked row: its blocks' maxima are -inf
    const auto beam_scores = -torch::rand({sentences * beam}) * 10;
    const auto maxima = log_normalizers(log_probs).block_maxima;
    expect_as_topk(log_probs, beam_scores, beam, 2 * beam, maxima);
    expect_as_topk(log_probs, beam_scores, beam, 2 * beam, maxima + 1.0);  // looser bounds: the same result
  }
}

TEST(BeamTopK, ABlockItsMaximumRulesOutIsNotRead) {
  // Row 0's best cells are in its first block; a bound of -inf there says no cell of it can enter.
  const int64_t width = 2 * kLogitBlock;
  auto log_probs = torch::full({1, width}, -5.0F);
  log_probs[0][3] = -1.0F;
  auto maxima = log_normalizers(log_probs).block_maxima;
  const auto [all_scores, all_ids] = beam_top_k(log_probs, torch::zeros({1}), 1, 2, maxima);
  EXPECT_EQ(all_ids[0][0].item<int64_t>(), 3);
  maxima[0][0] = -std::numeric_limits<float>::infinity();
  const auto [scores, ids] = beam_top_k(log_probs, torch::zeros({1}), 1, 2, maxima);
  EXPECT_GE(ids[0][0].item<int64_t>(), kLogitBlock);
  EXPECT_GE(ids[0][1].item<int64_t>(), kLogitBlock);
  EXPECT_THROW(beam_top_k(log_probs, torch::zeros({1}), 1, 2, maxima.narrow(1, 0, 1)), c10::Error);
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
