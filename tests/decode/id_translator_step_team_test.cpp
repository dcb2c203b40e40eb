// IdTranslator's searches at a few rows hold a StepTeam (TranslatorOptions::step_team), and so do
// the steps of its streams (a server's running batch): the same translations as without it, in
// float32 and int8.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "decode/id_translator.h"
#include "model/small_rows_product.h"
#include "runtime/threads.h"
#include "tests/decode/decode_test_support.h"

namespace tfm {
namespace {

/// An untrained model wide enough that a step's products split among two threads (~64k
/// multiply-adds a share at a beam's rows), with sharp distributions over 40 tokens.
Transformer wide_model() {
  ModelConfig config = testing::tiny_config(40, 2, 2);
  config.d_model = 256;
  config.d_ff = 1024;
  config.heads = 4;
  torch::manual_seed(5);
  Transformer model(config);
  model->eval();
  {
    torch::NoGradGuard no_grad;
    model->target_embedding->tokens->weight.mul_(8.0);
  }
  return model;
}

/// Sources of 1-12 subwords, one a batch below.
std::vector<std::vector<int64_t>> sources() {
  torch::manual_seed(3);
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < 12; ++i) {
    const int64_t length = torch::randint(1, 13, {1}).item<int64_t>();
    const auto ids = torch::randint(4, 40, {length}, torch::kLong);
    out.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + length);
  }
  return out;
}

/// `sources` through a stream as a server's running batch takes them: a few at the start, then
/// one joining after each step, and steps until every one is done. Results in the order given.
std::vector<IdTranslation> streamed(IdTranslator& translator, std::vector<std::vector<int64_t>> sources) {
  auto stream = translator.stream(translator.search_options());
  EXPECT_NE(stream, nullptr);
  std::vector<IdTranslation> out(sources.size());
  size_t next = 0;
  const auto add = [&](size_t count) {
    std::vector<std::vector<int64_t>> batch;
    std::vector<int64_t> tags;
    for (; count > 0 && next < sources.size(); --count, ++next) {
      batch.push_back(sources[next]);
      tags.push_back(static_cast<int64_t>(next));
    }
    if (!batch.empty()) stream->add(std::move(batch), tags);
  };
  add(3);
  while (stream->sentences() > 0) {
    for (auto& finished : stream->step()) out[static_cast<size_t>(finished.tag)] = std::move(finished.translation);
    add(1);
  }
  return out;
}

void expect_same(const std::vector<IdTranslation>& got, const std::vector<IdTranslation>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(got[i].nbest.size(), expected[i].nbest.size()) << "sentence " << i;
    for (size_t n = 0; n < expected[i].nbest.size(); ++n) {
      EXPECT_EQ(got[i].nbest[n].tokens, expected[i].nbest[n].tokens) << "sentence " << i;
      EXPECT_EQ(got[i].nbest[n].score, expected[i].nbest[n].score) << "sentence " << i;  // the same bits
    }
  }
}

void expect_same_with_and_without_team(TranslatorOptions options) {
  const int before = at::get_num_threads();
  set_this_thread_team(2);
  options.search.beam = 4;
  options.search.nbest = 2;
  options.batch_size = 1;
  const auto model = wide_model();
  options.step_team = true;
  IdTranslator with_team({model}, options, torch::kCPU);
  options.step_team = false;
  IdTranslator without({model}, options, torch::kCPU);
  EXPECT_TRUE(with_team.holds_step_team(12));
  EXPECT_FALSE(without.holds_step_team(12));
  EXPECT_FALSE(with_team.holds_step_team(SmallRowsProduct::kMaxRows + 1));
  const auto expected = without.translate(sources());
  const auto got = with_team.translate(sources());
  const auto got_streamed = streamed(with_team, sources());
  const auto expected_streamed = streamed(without, sources());
  set_this_thread_team(before);
  {
    SCOPED_TRACE("translate()");
    expect_same(got, expected);
  }
  {
    SCOPED_TRACE("a stream");
    expect_same(got_streamed, expected_streamed);
  }
}

TEST(IdTranslatorStepTeam, Float32TranslationsAreTheSameBits) {
  if (!SmallRowsProduct::takes(torch::kFloat32, 4))
    GTEST_SKIP() << "this CPU or build has no small-rows float32 kernels (LIBXSMM, AVX2): no team is held";
  expect_same_with_and_without_team({});
}

TEST(IdTranslatorStepTeam, Int8TranslationsAreTheSameBits) {
  TranslatorOptions options;
  options.quantize_int8 = true;
  expect_same_with_and_without_team(options);
}

}  // namespace
}  // namespace tfm
