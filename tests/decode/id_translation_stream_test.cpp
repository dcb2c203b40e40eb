// IdTranslator::stream(): sentences added to a running stream come back as translate() gives them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <vector>

#include "decode/id_translator.h"
#include "tests/decode/decode_test_support.h"

namespace tfm {
namespace {

using testing::random_model;

TranslatorOptions stream_options() {
  TranslatorOptions options;
  options.search.beam = 3;
  options.search.nbest = 2;
  options.max_source_len = 6;  // the last source is truncated
  return options;
}

TEST(IdTranslationStream, EqualsTranslate) {
  IdTranslator translator({random_model(15, 31)}, stream_options(), torch::kCPU);
  const std::vector<std::vector<int64_t>> sources = {{4, 5, 6}, {},           {7, 8, 9, 10, 11},
                                                     {13},      {6, 6, 6, 6}, {14, 13, 12, 11, 10, 9, 8, 7}};
  const auto expected = translator.translate(sources);
  const int64_t tokens_before = translator.target_tokens();

  auto stream = translator.stream(translator.search_options());
  ASSERT_NE(stream, nullptr);
  std::map<int64_t, IdTranslation> got;
  auto collect = [&] {
    for (auto& finished : stream->step()) got[finished.tag] = std::move(finished.translation);
  };
  stream->add({sources[0], sources[1]}, {0, 1});
  EXPECT_EQ(stream->sentences(), 2U);
  EXPECT_EQ(stream->source_tokens(), 4 + 1);
  collect();
  EXPECT_EQ(got.count(1), 1U);  // the empty source, at once
  stream->add({sources[2]}, {2});
  collect();
  stream->add({sources[3], sources[4], sources[5]}, {3, 4, 5});
  while (stream->sentences() > 0) collect();
  EXPECT_EQ(stream->source_tokens(), 0);

  ASSERT_EQ(got.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto& stream_result = got[static_cast<int64_t>(i)];
    EXPECT_EQ(stream_result.truncated, expected[i].truncated) << "sentence " << i;
    EXPECT_EQ(stream_result.at_max_length, expected[i].at_max_length) << "sentence " << i;
    EXPECT_EQ(stream_result.source_ids, expected[i].source_ids) << "sentence " << i;
    ASSERT_EQ(stream_result.nbest.size(), expected[i].nbest.size()) << "sentence " << i;
    for (size_t n = 0; n < expected[i].nbest.size(); ++n) {
      EXPECT_EQ(stream_result.nbest[n].tokens, expected[i].nbest[n].tokens) << "sentence " << i;
      EXPECT_NEAR(stream_result.nbest[n].score, expected[i].nbest[n].score, 1e-4) << "sentence " << i;
    }
  }
  EXPECT_TRUE(got[5].truncated);
  EXPECT_EQ(translator.target_tokens(), 2 * tokens_before);  // the stream counts what it produced
}

TEST(IdTranslator, FlagsTheTranslationsThatTakeTheWholeMaximumLength) {
  // at_max_length warns that search may have cut a translation short: set exactly where the best
  // has max_output_length() - 1 subwords (its eos the last allowed), by translate() and streams alike.
  const std::vector<std::vector<int64_t>> sources = {{4, 5, 6}, {}, {7, 8, 9, 10, 11}, {13}, {6, 6, 6, 6}};
  TranslatorOptions options = stream_options();
  options.search.max_len_a = 0.5;
  options.search.max_len_b = 8;
  // This model runs some outputs to the maximum and ends others early (an empty output among them).
  IdTranslator translator({random_model(15, 13)}, options, torch::kCPU);
  const auto out = translator.translate(sources);
  auto stream = translator.stream(translator.search_options());
  std::map<int64_t, IdTranslation> streamed;
  stream->add(sources, {0, 1, 2, 3, 4});
  while (stream->sentences() > 0) {
    for (auto& finished : stream->step()) streamed[finished.tag] = std::move(finished.translation);
  }
  int64_t flagged = 0, translated = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (out[i].nbest.empty()) {
      EXPECT_TRUE(sources[i].empty());
      EXPECT_FALSE(out[i].at_max_length);
      continue;
    }
    const int64_t most = static_cast<int64_t>(sources[i].size()) / 2 + 8 - 1;  // subwords before the eos
    const bool at_most = static_cast<int64_t>(out[i].nbest.front().tokens.size()) == most;
    EXPECT_EQ(out[i].at_max_length, at_most) << "sentence " << i;
    EXPECT_EQ(streamed[static_cast<int64_t>(i)].at_max_length, at_most) << "sentence " << i;
    flagged += at_most ? 1 : 0;
    ++translated;
  }
  EXPECT_GT(flagged, 0);
  EXPECT_LT(flagged, translated);
}

TEST(IdTranslationStream, OnlyForBeamSearchOverTheWholeVocabulary) {
  IdTranslator translator({random_model(15, 31)}, stream_options(), torch::kCPU);
  auto greedy = translator.search_options();
  greedy.beam = 1;
  greedy.nbest = 1;
  EXPECT_EQ(translator.stream(greedy), nullptr);
  auto sampled = translator.search_options();
  sampled.sampling.enabled = true;
  sampled.nbest = 1;
  EXPECT_EQ(translator.stream(sampled), nullptr);
  auto invalid = translator.search_options();
  invalid.beam = 0;
  EXPECT_THROW(translator.stream(invalid), std::invalid_argument);
}

}  // namespace
}  // namespace tfm
