// The shortlist's calibration against the full model: the normalizer that decoding step by step
// computes with the measured correction (Transformer::restrict_output) must match the whole
// vocabulary's log-sum-exp on average over the same steps, computed by teacher forcing.
#include "model/shortlist_calibration.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/model/model_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

constexpr int64_t kVocab = 64;

/// Each source token lists three targets, the special ids none (as a corpus gives: they are not in
/// it, and pad's list would join every padded sentence's); two frequent ones for every sentence.
Shortlist three_per_source() {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> targets;
  for (int64_t s = 0; s < kVocab; ++s) {
    std::vector<int32_t> mine;
    for (const int64_t t : {(s * 5) % kVocab, (s * 5 + 1) % kVocab, (s * 13 + 7) % kVocab}) {
      if (t >= kNumSpecialIds && s >= kNumSpecialIds) mine.push_back(static_cast<int32_t>(t));
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    targets.insert(targets.end(), mine.begin(), mine.end());
    offsets.push_back(static_cast<int64_t>(targets.size()));
  }
  return Shortlist(kVocab, {4, 5}, offsets, targets);
}

Transformer sharp_model(uint64_t seed) {
  auto config = testing::tiny_model_config();
  config.vocab_size = kVocab;
  torch::manual_seed(seed);
  Transformer model(config);
  model->eval();
  torch::NoGradGuard no_grad;
  // Sharper, less normal logits than the initialisation's, so the estimate is visibly off.
  model->target_embedding->tokens->weight.mul_(3.0);
  return model;
}

/// Random pairs of 1-12 tokens, no specials: a batch of 64 has more rows than one block of the
/// calibrator's full product.
void random_pairs(int64_t count, std::vector<std::vector<int64_t>>& sources,
                  std::vector<std::vector<int64_t>>& targets) {
  for (int64_t i = 0; i < count; ++i) {
    for (auto* side : {&sources, &targets}) {
      const int64_t length = 1 + torch::randint(12, {1}).item<int64_t>();
      const auto ids = torch::randint(kNumSpecialIds, kVocab, {length}, torch::kLong);
      side->emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + length);
    }
  }
}

/// Mean over every step of the pairs of (decoding's normalizer under the shortlist, with the
/// correction) - (log-sum-exp of the full model's logits), the first step by step, the second by
/// teacher forcing.
double mean_normalizer_error(Transformer& model, const Shortlist& shortlist, double correction,
                             const std::vector<std::vector<int64_t>>& sources,
                             const std::vector<std::vector<int64_t>>& targets) {
  torch::NoGradGuard no_grad;
  double sum = 0;
  int64_t steps = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto source_ids = sources[i];
    source_ids.push_back(kEosId);
    std::vector<int64_t> target_ids{kBosId};
    target_ids.insert(target_ids.end(), targets[i].begin(), targets[i].end());
    const auto source = torch::tensor(source_ids).view({1, -1});                              // [1, S]
    const auto target_in = torch::tensor(target_ids).view({1, -1});                           // [1, T]
    const auto exact = model->forward(source, target_in)[0].to(torch::kDouble).logsumexp(1);  // [T]
    auto state = model->start_decoding(model->encode(source));
    model->restrict_output(state, shortlist.candidates(source), correction);
    for (int64_t t = 0; t < target_in.size(1); ++t) {
      const auto step = model->step_logits(target_in.select(1, t), state);
      const auto all = torch::cat({step.logits, step.rest.unsqueeze(1)}, 1).to(torch::kDouble);  // [1, C + 1]
      sum += all.logsumexp(1).item<double>() - exact[t].item<double>();
      ++steps;
    }
  }
  return sum / static_cast<double>(steps);
}

TEST(ShortlistCalibration, ItsCorrectionTakesDecodingsMeanNormalizerErrorToZero) {
  const auto shortlist = three_per_source();
  for (const uint64_t seed : {1, 2}) {
    auto model = sharp_model(seed);
    std::vector<std::vector<int64_t>> sources, targets;
    random_pairs(100, sources, targets);  // more than one batch of add_pairs
    ShortlistCalibrator calibrator(model, shortlist);
    calibrator.add_pairs(sources, targets);
    int64_t want_steps = 0;
    for (const auto& target : targets) want_steps += static_cast<int64_t>(target.size()) + 1;
    ASSERT_EQ(calibrator.steps(), want_steps);
    const auto calibration = calibrator.solve();
    const double before = mean_normalizer_error(model, shortlist, 0.0, sources, targets);
    const double after = mean_normalizer_error(model, shortlist, calibration.correction, sources, targets);
    EXPECT_GT(std::abs(before), 1e-3) << "seed " << seed << ": nothing to correct, the test proves nothing";
    EXPECT_NEAR(calibration.mean_before, before, 1e-4) << "seed " << seed;
    EXPECT_NEAR(after, 0.0, 1e-4) << "seed " << seed << ", correction " << calibration.correction;
    EXPECT_NEAR(calibration.mean_after, 0.0, 1e-6) << "seed " << seed;
    EXPECT_LE(calibration.mean_abs_after, calibration.mean_abs_before + 1e-9) << "seed " << seed;
  }
}

TEST(ShortlistCalibration, NothingToCorrectWithoutStepsOrWithoutTokensLeftOut) {
  auto model = sharp_model(3);
  const auto shortlist = three_per_source();
  EXPECT_EQ(ShortlistCalibrator(model, shortlist).solve().correction, 0.0);
  // Every token a candidate: the normalizer is exact and no correction is measured.
  std::vector<int64_t> all(kVocab - kNumSpecialIds);
  for (int64_t i = 0; i < static_cast<int64_t>(all.size()); ++i) all[i] = kNumSpecialIds + i;
  const Shortlist everything(kVocab, all, std::vector<int64_t>(kVocab + 1, 0), {});
  ShortlistCalibrator calibrator(model, everything);
  calibrator.add_pairs({{7, 8, 9}}, {{10, 11}});
  const auto calibration = calibrator.solve();
  EXPECT_EQ(calibration.steps, 3);
  EXPECT_EQ(calibration.correction, 0.0);
  EXPECT_NEAR(calibration.mean_before, 0.0, 1e-5);
}

}  // namespace
}  // namespace tfm
