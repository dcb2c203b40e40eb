// IdTranslator with several batches decoded side by side (TranslatorOptions::workers).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "decode/id_translator.h"
#include "runtime/threads.h"
#include "tests/decode/decode_test_support.h"

namespace tfm {
namespace {

using testing::random_model;

/// Sources of 1-9 subwords from a 15-token vocabulary, and one empty.
std::vector<std::vector<int64_t>> mixed_sources() {
  torch::manual_seed(11);
  std::vector<std::vector<int64_t>> sources;
  for (int i = 0; i < 24; ++i) {
    const int64_t length = torch::randint(1, 10, {1}).item<int64_t>();
    const auto ids = torch::randint(4, 15, {length}, torch::kLong);
    sources.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + length);
  }
  sources.insert(sources.begin() + 5, std::vector<int64_t>{});
  return sources;
}

/// Runs `body` with the calling thread's parallel loops on `threads` cores, then restores them.
template <typename Body>
void with_cores(int threads, Body body) {
  const int before = at::get_num_threads();
  set_this_thread_team(threads);
  body();
  set_this_thread_team(before);
}

void expect_same(const std::vector<IdTranslation>& got, const std::vector<IdTranslation>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(got[i].source_ids, expected[i].source_ids) << "sentence " << i;
    ASSERT_EQ(got[i].nbest.size(), expected[i].nbest.size()) << "sentence " << i;
    for (size_t n = 0; n < expected[i].nbest.size(); ++n) {
      EXPECT_EQ(got[i].nbest[n].tokens, expected[i].nbest[n].tokens) << "sentence " << i;
      EXPECT_NEAR(got[i].nbest[n].score, expected[i].nbest[n].score, 1e-4) << "sentence " << i;
    }
  }
}

TEST(IdTranslatorWorkers, BatchesSideBySideGiveWhatOneAtATimeGives) {
  TranslatorOptions options;
  options.search.beam = 3;
  options.search.nbest = 2;
  options.max_tokens = 24;  // a few sentences a batch: many batches for the workers to share
  IdTranslator one_at_a_time({random_model(15, 31)}, options, torch::kCPU);
  const auto expected = one_at_a_time.translate(mixed_sources());
  options.workers = 3;
  IdTranslator side_by_side({random_model(15, 31)}, options, torch::kCPU);
  with_cores(3, [&] {
    expect_same(side_by_side.translate(mixed_sources()), expected);
    // Per-call search settings (a server's) take the same path.
    expect_same(side_by_side.translate(mixed_sources(), side_by_side.search_options()), expected);
  });
  EXPECT_EQ(side_by_side.target_tokens(), 2 * one_at_a_time.target_tokens());
}

TEST(IdTranslatorWorkers, SamplingDrawsInOneSequenceWhateverTheWorkers) {
  TranslatorOptions options;
  options.search.beam = 1;
  options.search.sampling.enabled = true;
  options.search.sampling.top_k = 5;
  options.search.sampling.seed = 7;
  options.max_tokens = 24;
  IdTranslator one({random_model(15, 31)}, options, torch::kCPU);
  const auto expected = one.translate(mixed_sources());
  options.workers = 2;
  IdTranslator two({random_model(15, 31)}, options, torch::kCPU);
  with_cores(2, [&] { expect_same(two.translate(mixed_sources()), expected); });
}

TEST(IdTranslatorWorkers, AtLeastOneWorker) {
  TranslatorOptions options;
  options.workers = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
