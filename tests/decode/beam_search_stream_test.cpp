// Continuous batching in search: sentences added to a running BeamSearchStream are translated as
// beam_search() translates each alone.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include "decode/beam_search.h"
#include "decode/scorer.h"
#include "model/shortlist.h"
#include "tests/decode/decode_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

using testing::batch_of;
using testing::random_model;
using testing::source_for;

const std::vector<std::vector<int64_t>> kSentences = {{4, 5, 6}, {7, 8, 9, 10, 11, 12},         {13}, {6, 6, 6, 6},
                                                      {9, 4},    {14, 13, 12, 11, 10, 9, 8, 7}, {5},  {10, 11}};

SearchOptions stream_options() {
  SearchOptions options;
  options.beam = 3;
  options.nbest = 2;
  options.min_len = 2;  // a rule that counts each sentence's own tokens
  options.max_len_a = 1.5;
  options.max_len_b = 3;
  return options;
}

/// Adds kSentences[first .. first+count-1] to the stream as one batch, tagged with their indices.
void add_sentences(BeamSearchStream& stream, size_t first, size_t count) {
  std::vector<std::vector<int64_t>> batch(kSentences.begin() + first, kSentences.begin() + first + count);
  std::vector<int64_t> lengths, tags;
  const auto source = batch_of(batch, lengths);
  for (size_t i = 0; i < count; ++i) tags.push_back(static_cast<int64_t>(first + i));
  stream.add(source, lengths, tags);
}

void collect(std::vector<FinishedSentence> finished, std::map<int64_t, std::vector<Hypothesis>>& results) {
  for (auto& sentence : finished) {
    EXPECT_EQ(results.count(sentence.tag), 0U) << "sentence " << sentence.tag << " finished twice";
    results[sentence.tag] = std::move(sentence.nbest);
  }
}

void expect_joined_equal_alone(bool grad, const Shortlist* shortlist = nullptr) {
  torch::AutoGradMode mode(grad);
  auto model = random_model(15, 31);
  TransformerScorer scorer(model, shortlist);
  const auto options = stream_options();
  BeamSearchStream stream(scorer, options);
  std::map<int64_t, std::vector<Hypothesis>> results;
  add_sentences(stream, 0, 1);
  add_sentences(stream, 1, 1);  // joins before the first step, while rows are one per sentence
  collect(stream.step(), results);
  add_sentences(stream, 2, 1);  // joins after one step
  collect(stream.step(), results);
  collect(stream.step(), results);
  add_sentences(stream, 3, 3);  // a batch of three, the longest source so far
  EXPECT_GE(stream.sentences(), 3U);
  for (int i = 0; i < 3; ++i) collect(stream.step(), results);
  add_sentences(stream, 6, 2);
  while (!stream.empty()) collect(stream.step(), results);
  ASSERT_EQ(results.size(), kSentences.size());

  for (size_t b = 0; b < kSentences.size(); ++b) {
    const auto alone =
        beam_search(scorer, source_for(kSentences[b]), {static_cast<int64_t>(kSentences[b].size())}, options)[0];
    const auto& joined = results[static_cast<int64_t>(b)];
    ASSERT_EQ(joined.size(), alone.size()) << "sentence " << b;
    for (size_t n = 0; n < alone.size(); ++n) {
      EXPECT_EQ(joined[n].tokens, alone[n].tokens) << "sentence " << b << ", hypothesis " << n;
      EXPECT_NEAR(joined[n].score, alone[n].score, 1e-4) << "sentence " << b << ", hypothesis " << n;
    }
  }
}

TEST(BeamSearchStream, JoinedSentencesEqualEachAlone) {
  SCOPED_TRACE("outside autograd (step attention)");
  expect_joined_equal_alone(false);
}

TEST(BeamSearchStream, JoinedSentencesEqualEachAloneInAutograd) {
  SCOPED_TRACE("in autograd (matmul attention)");
  expect_joined_equal_alone(true);
}

/// Source token s may become s - 4, s - 3 or s + 1 (within 4 .. 14), besides the frequent 4 and 5:
/// lists of different lengths per sentence.
Shortlist small_shortlist() {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> targets;
  for (int64_t s = 0; s < 15; ++s) {
    for (const int64_t t : {s - 4, s - 3, s + 1}) {
      if (t >= 6 && t < 15) targets.push_back(static_cast<int32_t>(t));
    }
    offsets.push_back(static_cast<int64_t>(targets.size()));
  }
  return Shortlist(15, {4, 5}, offsets, targets);
}

TEST(BeamSearchStream, JoinedSentencesEqualEachAloneUnderAShortlist) {
  SCOPED_TRACE("each sentence over its own candidates");
  const auto shortlist = small_shortlist();
  expect_joined_equal_alone(false, &shortlist);
}

/// A model whose next-token probabilities depend only on how many tokens a row has: eos is likely
/// from the second token on, so the minimum length decides when each sentence ends.
class CountingScorer : public Scorer {
 public:
  struct Counts : State {
    std::vector<int64_t> rows;  // tokens so far per row
    void reorder(const torch::Tensor& index, bool /*same_source*/) override {
      std::vector<int64_t> next;
      for (int64_t i = 0; i < index.size(0); ++i) next.push_back(rows[index[i].item<int64_t>()]);
      rows = std::move(next);
    }
    void append(State& other) override {
      const auto& joining = static_cast<Counts&>(other).rows;
      rows.insert(rows.end(), joining.begin(), joining.end());
    }
  };
  std::unique_ptr<State> start(const torch::Tensor& source) override {
    auto state = std::make_unique<Counts>();
    state->rows.assign(source.size(0), 0);
    return state;
  }
  torch::Tensor step(const torch::Tensor& last, State& state) override {
    auto& counts = static_cast<Counts&>(state).rows;
    auto out = torch::full({last.size(0), 8}, std::log(1e-3));
    for (int64_t i = 0; i < last.size(0); ++i) {
      if (last[i].item<int64_t>() != kBosId) ++counts[i];
      out[i][kEosId] = std::log(counts[i] == 0 ? 0.05 : 0.6);
      out[i][4] = std::log(0.5);
      out[i][5] = std::log(0.3);
    }
    return out;
  }
  int64_t vocab_size() const override { return 8; }
  bool joins() const override { return true; }
};

TEST(BeamSearchStream, MinimumLengthCountsEachSentencesOwnTokens) {
  CountingScorer scorer;
  auto options = stream_options();
  options.beam = 2;
  options.nbest = 1;
  options.min_len = 3;
  const auto source = source_for({4, 5, 6});
  BeamSearchStream stream(scorer, options);
  std::map<int64_t, std::vector<Hypothesis>> results;
  stream.add(source, {3}, {0});
  collect(stream.step(), results);
  collect(stream.step(), results);
  stream.add(source, {3}, {1});  // two steps behind the first
  while (!stream.empty()) collect(stream.step(), results);
  const auto alone = beam_search(scorer, source, {3}, options)[0];
  ASSERT_EQ(alone.front().tokens.size(), 3U);  // ends as soon as it may
  for (const int64_t tag : {0, 1}) {
    EXPECT_EQ(results[tag].front().tokens, alone.front().tokens) << "sentence " << tag;
    EXPECT_NEAR(results[tag].front().score, alone.front().score, 1e-6) << "sentence " << tag;
  }
}

/// A Transformer scorer that records how many rows each step scores.
class RowCountingScorer : public Scorer {
 public:
  explicit RowCountingScorer(Transformer model) : inner_(std::move(model)) {}
  std::unique_ptr<State> start(const torch::Tensor& source) override { return inner_.start(source); }
  torch::Tensor step(const torch::Tensor& last_tokens, State& state) override {
    rows_per_step.push_back(last_tokens.size(0));
    return inner_.step(last_tokens, state);
  }
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  bool joins() const override { return true; }
  std::vector<int64_t> rows_per_step;

 private:
  TransformerScorer inner_;
};

TEST(BeamSearchStream, ABatchsFirstStepScoresOneRowPerSentence) {
  torch::NoGradGuard no_grad;
  RowCountingScorer scorer(random_model(15, 31));
  const auto options = stream_options();  // beam 3, min_len 2: nobody ends at the first step
  BeamSearchStream stream(scorer, options);
  add_sentences(stream, 0, 4);
  stream.step();
  stream.step();
  add_sentences(stream, 4, 2);  // joins a running batch: its first step is one of K rows each
  const auto in_flight = static_cast<int64_t>(stream.sentences());
  stream.step();
  ASSERT_EQ(scorer.rows_per_step.size(), 3U);
  EXPECT_EQ(scorer.rows_per_step[0], 4);
  EXPECT_EQ(scorer.rows_per_step[1], 4 * options.beam);
  EXPECT_EQ(scorer.rows_per_step[2], in_flight * options.beam);
}

/// A Transformer scorer that does not say it can join.
class LoneScorer : public Scorer {
 public:
  explicit LoneScorer(Transformer model) : inner_(std::move(model)) {}
  std::unique_ptr<State> start(const torch::Tensor& source) override { return inner_.start(source); }
  torch::Tensor step(const torch::Tensor& last_tokens, State& state) override {
    return inner_.step(last_tokens, state);
  }
  int64_t vocab_size() const override { return inner_.vocab_size(); }

 private:
  TransformerScorer inner_;
};

TEST(BeamSearchStream, AScorerThatCannotJoinTakesSentencesOnlyWhenEmpty) {
  torch::NoGradGuard no_grad;
  LoneScorer scorer(random_model(15, 31));
  ASSERT_FALSE(scorer.joins());
  BeamSearchStream stream(scorer, stream_options());
  add_sentences(stream, 0, 1);
  stream.step();
  ASSERT_FALSE(stream.empty());  // min_len 2: no sentence ends at its first step
  EXPECT_THROW(add_sentences(stream, 1, 1), std::logic_error);
  while (!stream.empty()) stream.step();
  add_sentences(stream, 1, 1);  // a new batch
  EXPECT_EQ(stream.sentences(), 1U);
}

}  // namespace
}  // namespace tfm
