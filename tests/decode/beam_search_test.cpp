#include "decode/beam_search.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "decode/greedy_search.h"
#include "decode/scorer.h"
#include "model/transformer.h"
#include "tests/decode/decode_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

using testing::batch_of;
using testing::random_model;
using testing::source_for;

/// Sum of log p(y_t | y_<t) over y + eos, by teacher-forced full forward passes.
double sequence_log_prob(Transformer& model, const torch::Tensor& source, const std::vector<int64_t>& tokens) {
  std::vector<int64_t> input{kBosId};
  input.insert(input.end(), tokens.begin(), tokens.end());
  auto output = tokens;
  output.push_back(kEosId);
  const auto log_probs = torch::log_softmax(model->forward(source, torch::tensor(input).view({1, -1})), -1)[0];
  double total = 0;
  for (size_t t = 0; t < output.size(); ++t) total += log_probs[t][output[t]].item<double>();
  return total;
}

/// The obvious greedy loop over full forward passes: argmax among allowed tokens until eos.
std::vector<int64_t> greedy_reference(Transformer& model, const torch::Tensor& source, int64_t max_len) {
  std::vector<int64_t> prefix{kBosId};
  while (static_cast<int64_t>(prefix.size()) <= max_len) {
    auto logits = model->forward(source, torch::tensor(prefix).view({1, -1}))[0][-1];
    logits[kPadId] = -1e9;
    logits[kBosId] = -1e9;
    if (static_cast<int64_t>(prefix.size()) == max_len) return {prefix.begin() + 1, prefix.end()};  // forced eos
    const int64_t next = logits.argmax().item<int64_t>();
    if (next == kEosId) break;
    prefix.push_back(next);
  }
  return {prefix.begin() + 1, prefix.end()};
}

TEST(BeamSearch, BeamOneEqualsGreedyLoop) {
  for (int64_t seed = 0; seed < 4; ++seed) {
    auto model = random_model(12, seed);
    TransformerScorer scorer(model);
    const std::vector<int64_t> tokens{5, 6, 7, 8};
    SearchOptions options;
    options.beam = 1;
    options.max_len_a = 0;
    options.max_len_b = 10;
    const auto result = beam_search(scorer, source_for(tokens), {4}, options);
    ASSERT_EQ(result.size(), 1u);
    ASSERT_EQ(result[0].size(), 1u);
    EXPECT_EQ(result[0][0].tokens, greedy_reference(model, source_for(tokens), 10)) << "seed " << seed;
  }
}

TEST(GreedySearch, EqualsTheGreedyLoopOverFullForwardPasses) {
  for (int64_t seed = 0; seed < 6; ++seed) {
    auto model = random_model(12, seed);
    TransformerScorer scorer(model);
    const std::vector<int64_t> tokens{5, 6, 7, 8};
    SearchOptions options;
    options.beam = 1;
    options.length_penalty = 0.6;
    options.max_len_a = 0;
    options.max_len_b = 10;
    const auto result = greedy_search(scorer, source_for(tokens), {4}, options);
    ASSERT_EQ(result.size(), 1u);
    ASSERT_EQ(result[0].size(), 1u);
    const auto expected = greedy_reference(model, source_for(tokens), 10);
    EXPECT_EQ(result[0][0].tokens, expected) << "seed " << seed;
    const double log_prob = sequence_log_prob(model, source_for(tokens), expected);
    EXPECT_NEAR(result[0][0].log_prob, log_prob, 1e-4) << "seed " << seed;
    EXPECT_NEAR(result[0][0].score, log_prob / length_penalty(static_cast<int64_t>(expected.size()) + 1, 0.6), 1e-4);
  }
}

TEST(GreedySearch, BatchedEqualsOneByOneAndRulesApply) {
  auto model = random_model(15, 32);
  TransformerScorer scorer(model);
  const std::vector<std::vector<int64_t>> sentences = {{4, 5, 6}, {7, 8, 9, 10, 11, 12}, {13}, {6, 6, 6, 6}};
  SearchOptions options;
  options.beam = 1;
  options.max_len_a = 1.5;
  options.max_len_b = 3;
  options.no_repeat_ngram = 2;
  options.unk_penalty = 100;
  std::vector<int64_t> lengths;
  const auto batch = batch_of(sentences, lengths);
  const auto batched = greedy_search(scorer, batch, lengths, options);
  for (size_t b = 0; b < sentences.size(); ++b) {
    const auto alone = greedy_search(scorer, source_for(sentences[b]), {lengths[b]}, options);
    EXPECT_EQ(batched[b][0].tokens, alone[0][0].tokens) << "sentence " << b;
    EXPECT_NEAR(batched[b][0].score, alone[0][0].score, 1e-4) << "sentence " << b;
    const auto& out = batched[b][0].tokens;
    EXPECT_LT(static_cast<int64_t>(out.size()), max_output_length(lengths[b], options)) << "eos within the limit";
    EXPECT_EQ(std::count(out.begin(), out.end(), kUnkId), 0) << "unk penalised away";
    for (size_t i = 0; i + 3 < out.size(); ++i) {
      for (size_t j = i + 1; j + 1 < out.size(); ++j) {
        EXPECT_FALSE(out[i] == out[j] && out[i + 1] == out[j + 1]) << "bigram repeated in sentence " << b;
      }
    }
  }
}

/// Every output of at most `max_len` tokens (eos included) over the allowed tokens.
void enumerate(std::vector<int64_t>& prefix, int64_t max_len, const std::vector<int64_t>& allowed,
               const std::function<void(const std::vector<int64_t>&)>& visit) {
  visit(prefix);
  if (static_cast<int64_t>(prefix.size()) + 1 >= max_len) return;
  for (const int64_t token : allowed) {
    prefix.push_back(token);
    enumerate(prefix, max_len, allowed, visit);
    prefix.pop_back();
  }
}

TEST(BeamSearch, WideBeamFindsTheBruteForceBest) {
  constexpr int64_t kVocab = 7;
  constexpr int64_t kMaxLen = 4;
  for (int64_t seed = 0; seed < 3; ++seed) {
    auto model = random_model(kVocab, 10 + seed);
    const auto source = source_for({4, 5, 6});
    std::vector<std::pair<double, std::vector<int64_t>>> all;
    std::vector<int64_t> prefix;
    enumerate(prefix, kMaxLen, {kUnkId, 4, 5, 6}, [&](const std::vector<int64_t>& y) {
      const double lp = length_penalty(static_cast<int64_t>(y.size()) + 1, 0.6);
      all.emplace_back(sequence_log_prob(model, source, y) / lp, y);
    });
    std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first > y.first; });

    TransformerScorer scorer(model);
    SearchOptions options;
    options.beam = 343;  // |V|^(L-1): every prefix stays in the beam
    options.length_penalty = 0.6;
    options.nbest = 3;
    options.max_len_a = 0;
    options.max_len_b = kMaxLen;
    const auto result = beam_search(scorer, source, {3}, options)[0];
    ASSERT_EQ(result.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(result[i].tokens, all[i].second) << "seed " << seed << " rank " << i;
      EXPECT_NEAR(result[i].score, all[i].first, 1e-4) << "seed " << seed << " rank " << i;
    }
  }
}

TEST(BeamSearch, NarrowBeamReportsItsScoreCorrectly) {
  auto model = random_model(9, 21);
  TransformerScorer scorer(model);
  const auto source = source_for({4, 5, 6, 7, 8});
  SearchOptions options;
  options.beam = 2;
  options.length_penalty = 0.6;
  options.max_len_a = 0;
  options.max_len_b = 8;
  const auto best = beam_search(scorer, source, {5}, options)[0][0];
  const double log_prob = sequence_log_prob(model, source, best.tokens);
  EXPECT_NEAR(best.log_prob, log_prob, 1e-4);
  EXPECT_NEAR(best.score, log_prob / length_penalty(static_cast<int64_t>(best.tokens.size()) + 1, 0.6), 1e-4);
}

TEST(BeamSearch, BatchedEqualsOneByOne) {
  auto model = random_model(15, 31);
  TransformerScorer scorer(model);
  const std::vector<std::vector<int64_t>> sentences = {{4, 5, 6}, {7, 8, 9, 10, 11, 12}, {13}, {6, 6, 6, 6}};
  SearchOptions options;
  options.max_len_a = 1.5;
  options.max_len_b = 3;
  std::vector<int64_t> lengths;
  const auto batch = batch_of(sentences, lengths);
  const auto batched = beam_search(scorer, batch, lengths, options);
  for (size_t b = 0; b < sentences.size(); ++b) {
    const auto alone = beam_search(scorer, source_for(sentences[b]), {lengths[b]}, options);
    EXPECT_EQ(batched[b][0].tokens, alone[0][0].tokens) << "sentence " << b;
    EXPECT_NEAR(batched[b][0].score, alone[0][0].score, 1e-4) << "sentence " << b;
  }
}

/// TransformerScorer with blocks of at most `rows` rows (TransformerScorer::block_rows).
class SmallBlocksScorer : public TransformerScorer {
 public:
  SmallBlocksScorer(Transformer model, int64_t rows) : TransformerScorer(std::move(model)), rows_(rows) {}
  int64_t block_rows(const State& state) const override {
    EXPECT_GT(TransformerScorer::block_rows(state), 0) << "on the CPU without a shortlist the scores come in blocks";
    return rows_;
  }

 private:
  int64_t rows_;
};

// Beam search takes each block's top-k before the next block's scores: blocks of one sentence or
// several, and a last block smaller than the rest, find what one block of all the rows finds.
TEST(BeamSearch, ScoresInBlocksOfSentencesFindTheSameBeams) {
  auto model = random_model(15, 31);
  const std::vector<std::vector<int64_t>> sentences = {{4, 5, 6}, {7, 8, 9, 10, 11, 12}, {13}, {6, 6, 6, 6},
                                                       {9, 4},    {11, 12, 13, 5},       {8}};
  SearchOptions options;
  options.beam = 3;
  options.nbest = 2;
  options.max_len_a = 1.5;
  options.max_len_b = 3;
  std::vector<int64_t> lengths;
  const auto batch = batch_of(sentences, lengths);
  TransformerScorer whole(model);
  const auto want = beam_search(whole, batch, lengths, options);
  for (const int64_t rows : {1, 3, 7}) {  // 1: a sentence a block (its rows can exceed the bound)
    SmallBlocksScorer blocks(model, rows);
    const auto got = beam_search(blocks, batch, lengths, options);
    ASSERT_EQ(got.size(), want.size());
    for (size_t b = 0; b < want.size(); ++b) {
      ASSERT_EQ(got[b].size(), want[b].size()) << rows << " rows a block, sentence " << b;
      for (size_t n = 0; n < want[b].size(); ++n) {
        EXPECT_EQ(got[b][n].tokens, want[b][n].tokens) << rows << " rows a block, sentence " << b;
        EXPECT_NEAR(got[b][n].score, want[b][n].score, 1e-4) << rows << " rows a block, sentence " << b;
      }
    }
  }
}

/// A scripted model: the next-token distribution is a function of the prefix, so expected beams are exact.
class ScriptedScorer : public Scorer {
 public:
  using Script = std::function<std::vector<double>(const std::vector<int64_t>&)>;  // prefix -> probabilities
  ScriptedScorer(int64_t vocab, Script script) : vocab_(vocab), script_(std::move(script)) {}

  struct Prefixes : State {
    std::vector<std::vector<int64_t>> rows;
    void reorder(const torch::Tensor& index, bool /*same_source*/) override {
      std::vector<std::vector<int64_t>> next;
      for (int64_t i = 0; i < index.size(0); ++i) next.push_back(rows[index[i].item<int64_t>()]);
      rows = std::move(next);
    }
  };
  std::unique_ptr<State> start(const torch::Tensor& source) override {
    auto state = std::make_unique<Prefixes>();
    state->rows.resize(source.size(0));
    return state;
  }
  torch::Tensor step(const torch::Tensor& last, State& state) override {
    auto& prefixes = static_cast<Prefixes&>(state).rows;
    auto out = torch::empty({last.size(0), vocab_});
    for (int64_t i = 0; i < last.size(0); ++i) {
      if (last[i].item<int64_t>() != kBosId) prefixes[i].push_back(last[i].item<int64_t>());
      const auto probs = script_(prefixes[i]);
      for (int64_t v = 0; v < vocab_; ++v) out[i][v] = std::log(probs[v]);
    }
    return out;
  }
  int64_t vocab_size() const override { return vocab_; }

 private:
  int64_t vocab_;
  Script script_;
};

/// From the start: token 4 (0.5) or 5 (0.4) or eos (0.1); after one token: eos (0.9) or 6 (0.1).
std::vector<double> four_or_five_then_eos(const std::vector<int64_t>& prefix) {
  if (prefix.empty()) return {1e-9, 1e-9, 1e-9, 0.1, 0.5, 0.4, 1e-9};
  return {1e-9, 1e-9, 1e-9, 0.9, 1e-9, 1e-9, 0.1};
}

TEST(BeamSearch, ScriptedNBestIsExact) {
  ScriptedScorer scorer(7, four_or_five_then_eos);
  SearchOptions options;
  options.beam = 3;
  options.nbest = 3;
  options.length_penalty = 0.0;  // raw log-probabilities
  options.max_len_a = 0;
  options.max_len_b = 3;
  const auto result = beam_search(scorer, torch::full({1, 2}, 4, torch::kLong), {1}, options)[0];
  ASSERT_EQ(result.size(), 3u);
  EXPECT_EQ(result[0].tokens, (std::vector<int64_t>{4}));
  EXPECT_NEAR(result[0].score, std::log(0.5 * 0.9), 1e-6);
  EXPECT_EQ(result[1].tokens, (std::vector<int64_t>{5}));
  EXPECT_NEAR(result[1].score, std::log(0.4 * 0.9), 1e-6);
  EXPECT_EQ(result[2].tokens, (std::vector<int64_t>{}));
  EXPECT_NEAR(result[2].score, std::log(0.1), 1e-6);
}

TEST(BeamSearch, AnUnboundedMaximumLengthStillEndsOnceNoLiveBeamCanWin) {
  // ScriptedNBestIsExact's script with no length limit to speak of: the stopping rule, not the
  // limit, ends the search, and it must not walk the lengths up to the limit to find that out.
  ScriptedScorer scorer(7, four_or_five_then_eos);
  for (const double alpha : {0.0, 1.0, -0.5}) {
    SearchOptions options;
    options.beam = 3;
    options.nbest = 3;
    options.length_penalty = alpha;
    options.max_len_a = 0;
    options.max_len_b = 3;
    const auto bounded = beam_search(scorer, torch::full({1, 2}, 4, torch::kLong), {1}, options)[0];
    options.max_len_b = std::numeric_limits<int64_t>::max();
    if (alpha > 0) options.early_stop = true;  // the exact rule waits for the limit when longer is better
    const auto unbounded = beam_search(scorer, torch::full({1, 2}, 4, torch::kLong), {1}, options)[0];
    ASSERT_EQ(unbounded.size(), bounded.size()) << "alpha " << alpha;
    for (size_t n = 0; n < bounded.size(); ++n) {
      EXPECT_EQ(unbounded[n].tokens, bounded[n].tokens) << "alpha " << alpha << ", hypothesis " << n;
      EXPECT_DOUBLE_EQ(unbounded[n].score, bounded[n].score) << "alpha " << alpha << ", hypothesis " << n;
    }
  }
}

TEST(BeamSearch, EarlyStopEndsOnceBeamHypothesesFinished) {
  // Every step: eos 0.5, token 4 0.3, token 5 0.2. With K = 2 the first step finishes "eos" (the
  // empty output) and extends 4; the second finishes "4" and extends 4 4. Early stop ends there,
  // with two finished; the exact rule keeps going while a live beam could still win.
  ScriptedScorer scorer(
      6, [](const std::vector<int64_t>&) { return std::vector<double>{1e-9, 1e-9, 1e-9, 0.5, 0.3, 0.2}; });
  SearchOptions options;
  options.beam = 2;
  options.nbest = 2;
  options.length_penalty = 1.0;
  options.max_len_a = 0;
  options.max_len_b = 8;
  options.early_stop = true;
  const auto early = beam_search(scorer, source_for({4}), {1}, options);
  ASSERT_EQ(early[0].size(), 2u);
  EXPECT_EQ(early[0][0].tokens, std::vector<int64_t>{});
  EXPECT_EQ(early[0][1].tokens, std::vector<int64_t>{4});
  options.early_stop = false;
  const auto exact = beam_search(scorer, source_for({4}), {1}, options);
  ASSERT_EQ(exact[0].size(), 2u);
  EXPECT_GE(exact[0][1].score, early[0][1].score) << "the exact rule never does worse";
}

TEST(BeamSearch, NoRepeatNgramAndUnkPenalty) {
  // The script loves "4 5 4 5 ..." and unk.
  ScriptedScorer scorer(7, [](const std::vector<int64_t>& prefix) {
    std::vector<double> p(7, 0.01);
    const int64_t favourite = prefix.empty() || prefix.back() != 4 ? 4 : 5;
    p[favourite] = 0.6;
    p[kUnkId] = 0.3;
    p[kEosId] = 1e-6;  // hypotheses run to the maximum length
    return p;
  });
  SearchOptions options;
  options.beam = 2;
  options.max_len_a = 0;
  options.max_len_b = 6;
  options.no_repeat_ngram = 2;
  options.unk_penalty = 100.0;
  const auto best = beam_search(scorer, torch::full({1, 2}, 4, torch::kLong), {1}, options)[0][0];
  std::map<std::pair<int64_t, int64_t>, int> bigrams;
  for (size_t i = 0; i + 1 < best.tokens.size(); ++i) ++bigrams[{best.tokens[i], best.tokens[i + 1]}];
  for (const auto& [bigram, count] : bigrams) EXPECT_EQ(count, 1) << bigram.first << " " << bigram.second;
  EXPECT_EQ(std::count(best.tokens.begin(), best.tokens.end(), kUnkId), 0);
  EXPECT_EQ(best.tokens.size(), 5u);  // runs to the maximum length: eos is always unlikely here
}

}  // namespace
}  // namespace tfm
