// Decoding over a shortlist's columns, row by row, against the same scores laid out over the whole
// vocabulary (each token in its own column, -inf where a row's sentence has no candidate): both
// searches must find the same hypotheses with the same scores. What the scores are is tested
// against the full model below and in tests/model/shortlist_logits_test.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "decode/scorer.h"
#include "decode/search_strategy.h"
#include "model/shortlist.h"
#include "tests/decode/decode_test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

using testing::batch_of;
using testing::random_model;

/// A shortlisted scorer's log-probabilities scattered into [N, V]: token t in column t.
class ScatteredScorer : public Scorer {
 public:
  ScatteredScorer(Transformer model, const Shortlist& shortlist) : inner_(std::move(model), &shortlist) {}

  /// The shortlisted state, its columns the whole vocabulary's.
  struct Scattered : State {
    std::unique_ptr<State> inner;
    void reorder(const torch::Tensor& rows, bool same_source) override { inner->reorder(rows, same_source); }
    void repeat_rows(int64_t rows, int64_t times) override { inner->repeat_rows(rows, times); }
  };

  std::unique_ptr<State> start(const torch::Tensor& source) override {
    auto state = std::make_unique<Scattered>();
    state->inner = inner_.start(source);
    return state;
  }
  torch::Tensor step(const torch::Tensor& last_tokens, State& state) override {
    auto& inner = *static_cast<Scattered&>(state).inner;
    const auto listed = inner_.step(last_tokens, inner);  // [N, C]
    const auto columns = inner.columns();
    auto out = torch::full({listed.size(0), inner_.vocab_size()}, -std::numeric_limits<float>::infinity());
    for (int64_t n = 0; n < listed.size(0); ++n) {
      for (int64_t c = 0; c < listed.size(1); ++c) {
        const int64_t token = columns.token(n, c);
        if (token >= 0) out[n][token] = listed[n][c];
      }
    }
    return out;
  }
  int64_t vocab_size() const override { return inner_.vocab_size(); }

 private:
  TransformerScorer inner_;
};

/// Whether every token of every hypothesis of sentence b is among its own candidates.
void expect_own_candidates(const std::vector<std::vector<Hypothesis>>& got, const torch::Tensor& lists,
                           const std::string& what) {
  for (size_t b = 0; b < got.size(); ++b) {
    for (const auto& hypothesis : got[b]) {
      for (const int64_t token : hypothesis.tokens) {
        EXPECT_TRUE((lists[static_cast<int64_t>(b)] == token).any().item<bool>())
            << what << ": token " << token << " not a candidate of sentence " << b;
      }
    }
  }
}

/// Each source token translates to a few others; 6 tokens always allowed.
Shortlist hand_made_shortlist(int64_t vocab) {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> targets;
  for (int64_t s = 0; s < vocab; ++s) {
    for (const int64_t t : {(s * 7) % vocab, (s * 7 + 3) % vocab, (s * 11 + 5) % vocab}) {
      if (t >= kNumSpecialIds) targets.push_back(static_cast<int32_t>(t));
    }
    std::sort(targets.begin() + offsets.back(), targets.end());
    targets.erase(std::unique(targets.begin() + offsets.back(), targets.end()), targets.end());
    offsets.push_back(static_cast<int64_t>(targets.size()));
  }
  return Shortlist(vocab, {4, 5, 6, 7, 8, 9}, offsets, targets);
}

void expect_same(const std::vector<std::vector<Hypothesis>>& got, const std::vector<std::vector<Hypothesis>>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t b = 0; b < got.size(); ++b) {
    ASSERT_EQ(got[b].size(), want[b].size()) << what << ", sentence " << b;
    for (size_t i = 0; i < got[b].size(); ++i) {
      EXPECT_EQ(got[b][i].tokens, want[b][i].tokens) << what << ", sentence " << b << ", hypothesis " << i;
      EXPECT_NEAR(got[b][i].log_prob, want[b][i].log_prob, 1e-4) << what << ", sentence " << b;
    }
  }
}

TEST(ShortlistDecoding, SearchOverEachRowsColumnsEqualsSearchOverTheirTokens) {
  const int64_t vocab = 60;
  const auto shortlist = hand_made_shortlist(vocab);
  std::vector<int64_t> lengths;
  const auto source = batch_of({{10, 11, 12, 13}, {20, 21}, {30, 31, 32, 33, 34, 35}, {41}}, lengths);
  SearchOptions beam;
  beam.beam = 4;
  beam.nbest = 2;
  beam.max_len_a = 0;
  beam.max_len_b = 12;
  SearchOptions greedy = beam;
  greedy.beam = 1;
  greedy.nbest = 1;
  SearchOptions blocked = beam;
  blocked.no_repeat_ngram = 2;
  blocked.min_len = 3;
  const std::vector<std::pair<std::string, SearchOptions>> searches = {
      {"beam 4", beam}, {"greedy", greedy}, {"beam 4, no repeated bigram, min length 3", blocked}};
  for (int64_t seed = 0; seed < 3; ++seed) {
    auto model = random_model(vocab, seed);
    for (const auto& [name, options] : searches) {
      TransformerScorer shortlisted(model, &shortlist);
      ScatteredScorer scattered(model, shortlist);
      const auto got = make_search_strategy(options)->search(shortlisted, source, lengths);
      const auto want = make_search_strategy(options)->search(scattered, source, lengths);
      expect_same(got, want, name + ", seed " + std::to_string(seed));
      expect_own_candidates(got, shortlist.candidates(source), name);
    }
  }
}

// Each row's candidates keep the whole vocabulary's log-probabilities up to one shift per row (the
// normalizer: the candidates' and an estimate of the rest's, not all tokens').
TEST(ShortlistDecoding, CandidatesKeepTheFullModelsLogProbabilitiesUpToOneShiftPerRow) {
  torch::NoGradGuard no_grad;
  const int64_t vocab = 60;
  const auto shortlist = hand_made_shortlist(vocab);
  std::vector<int64_t> lengths;
  const auto source = batch_of({{10, 11, 12, 13}, {20, 21}, {41}}, lengths);
  auto model = random_model(vocab, 9);
  TransformerScorer shortlisted(model, &shortlist);
  TransformerScorer full(model);
  auto short_state = shortlisted.start(source);
  auto full_state = full.start(source);
  auto tokens = torch::full({source.size(0)}, kBosId, torch::kLong);
  for (int step = 0; step < 3; ++step) {
    const auto listed = shortlisted.step(tokens, *short_state);  // [N, C]
    const auto all = full.step(tokens, *full_state);             // [N, V]
    const auto columns = short_state->columns();
    for (int64_t n = 0; n < listed.size(0); ++n) {
      std::vector<double> shifts;
      for (int64_t c = 0; c < listed.size(1); ++c) {
        const int64_t token = columns.token(n, c);
        if (token >= 0) shifts.push_back(listed[n][c].item<double>() - all[n][token].item<double>());
      }
      ASSERT_GT(shifts.size(), 4U);
      for (const double shift : shifts) EXPECT_NEAR(shift, shifts.front(), 1e-4) << "row " << n << ", step " << step;
    }
    tokens = all.argmax(1);
  }
}

TEST(ShortlistDecoding, ASentenceIsTranslatedAsItIsAloneInAnyBatch) {
  const int64_t vocab = 60;
  const auto shortlist = hand_made_shortlist(vocab);
  const std::vector<std::vector<int64_t>> sentences = {{10, 11, 12, 13}, {20, 21}, {30, 31, 32, 33, 34, 35}, {41}};
  std::vector<int64_t> lengths;
  const auto source = batch_of(sentences, lengths);
  SearchOptions options;
  options.beam = 4;
  options.nbest = 2;
  options.max_len_a = 0;
  options.max_len_b = 12;
  TransformerScorer shortlisted(random_model(vocab, 4), &shortlist);
  const auto batched = make_search_strategy(options)->search(shortlisted, source, lengths);
  for (size_t b = 0; b < sentences.size(); ++b) {
    std::vector<int64_t> length;
    const auto alone = make_search_strategy(options)->search(shortlisted, batch_of({sentences[b]}, length), length);
    expect_same({batched[b]}, alone, "sentence " + std::to_string(b));
  }
}

TEST(ShortlistDecoding, AShortlistOfTheWholeVocabularyChangesNoBit) {
  const int64_t vocab = 30;
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> targets;
  for (int64_t s = 0; s < vocab; ++s) {
    for (int64_t t = kNumSpecialIds; t < vocab; ++t) targets.push_back(static_cast<int32_t>(t));
    offsets.push_back(static_cast<int64_t>(targets.size()));
  }
  const Shortlist everything(vocab, {}, offsets, targets);
  std::vector<int64_t> lengths;
  const auto source = batch_of({{5, 6, 7}, {8, 9}}, lengths);
  SearchOptions options;
  options.beam = 3;
  options.nbest = 3;
  options.max_len_a = 0;
  options.max_len_b = 8;
  auto model = random_model(vocab, 11);
  TransformerScorer shortlisted(model, &everything);
  TransformerScorer plain(model);
  const auto got = make_search_strategy(options)->search(shortlisted, source, lengths);
  const auto want = make_search_strategy(options)->search(plain, source, lengths);
  ASSERT_EQ(got.size(), want.size());
  for (size_t b = 0; b < got.size(); ++b) {
    ASSERT_EQ(got[b].size(), want[b].size());
    for (size_t i = 0; i < got[b].size(); ++i) {
      EXPECT_EQ(got[b][i].tokens, want[b][i].tokens);
      EXPECT_EQ(got[b][i].log_prob, want[b][i].log_prob);  // bit for bit
    }
  }
}

TEST(ShortlistDecoding, SamplingDrawsOnlyCandidates) {
  const int64_t vocab = 60;
  const auto shortlist = hand_made_shortlist(vocab);
  std::vector<int64_t> lengths;
  const auto source = batch_of({{10, 11}, {22, 23, 24}}, lengths);
  SearchOptions options;
  options.max_len_a = 0;
  options.max_len_b = 10;
  options.sampling.enabled = true;
  options.sampling.top_k = 0;
  options.sampling.top_p = 1.0;
  options.sampling.seed = 5;
  auto model = random_model(vocab, 2);
  TransformerScorer shortlisted(model, &shortlist);
  const auto lists = shortlist.candidates(source);
  auto search = make_search_strategy(options);
  int64_t drawn = 0;
  for (int round = 0; round < 5; ++round) {
    const auto got = search->search(shortlisted, source, lengths);
    expect_own_candidates(got, lists, "round " + std::to_string(round));
    for (const auto& sentence : got) drawn += static_cast<int64_t>(sentence.front().tokens.size());
  }
  EXPECT_GT(drawn, 0);
}

}  // namespace
}  // namespace tfm
