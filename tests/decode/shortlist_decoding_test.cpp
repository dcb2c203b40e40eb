// Decoding over a shortlist's columns against an independent reference: the same model scored
// over the whole vocabulary, with every token outside the batch's candidates masked to -inf and
// the rest renormalized. Both must find the same hypotheses with the same scores.
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

/// The whole vocabulary's log-probabilities, renormalized over `allowed` ([V] bool) and -inf elsewhere.
class MaskedScorer : public Scorer {
 public:
  MaskedScorer(Transformer model, const Shortlist& shortlist) : inner_(std::move(model)), shortlist_(shortlist) {}
  std::unique_ptr<State> start(const torch::Tensor& source) override {
    allowed_ = torch::zeros({inner_.vocab_size()}, torch::kBool);
    allowed_.index_fill_(0, shortlist_.candidates(source), true);
    return inner_.start(source);
  }
  torch::Tensor step(const torch::Tensor& last_tokens, State& state) override {
    const auto full = inner_.step(last_tokens, state);  // [N, V], normalized over V
    return torch::log_softmax(full.masked_fill(allowed_.logical_not(), -std::numeric_limits<float>::infinity()), -1);
  }
  int64_t vocab_size() const override { return inner_.vocab_size(); }

 private:
  TransformerScorer inner_;
  const Shortlist& shortlist_;
  torch::Tensor allowed_;
};

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

TEST(ShortlistDecoding, EqualsTheFullVocabularyMaskedToTheCandidates) {
  const int64_t vocab = 60;
  const auto shortlist = hand_made_shortlist(vocab);
  std::vector<int64_t> lengths;
  const auto source = batch_of({{10, 11, 12, 13}, {20, 21}, {30, 31, 32, 33, 34, 35}, {41}}, lengths);
  SearchOptions beam;
  beam.beam = 4;
  beam.nbest = 2;
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
      MaskedScorer masked(model, shortlist);
      const auto got = make_search_strategy(options)->search(shortlisted, source, lengths);
      const auto want = make_search_strategy(options)->search(masked, source, lengths);
      expect_same(got, want, name + ", seed " + std::to_string(seed));
      const auto candidates = shortlist.candidates(source);
      for (const auto& sentence : got) {
        for (const auto& hypothesis : sentence) {
          for (const int64_t token : hypothesis.tokens) {
            EXPECT_TRUE((candidates == token).any().item<bool>()) << name << ": token " << token << " not a candidate";
          }
        }
      }
    }
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
  options.max_len_b = 10;
  options.sampling.enabled = true;
  options.sampling.top_k = 0;
  options.sampling.top_p = 1.0;
  options.sampling.seed = 5;
  auto model = random_model(vocab, 2);
  TransformerScorer shortlisted(model, &shortlist);
  const auto candidates = shortlist.candidates(source);
  auto search = make_search_strategy(options);
  int64_t drawn = 0;
  for (int round = 0; round < 5; ++round) {
    for (const auto& sentence : search->search(shortlisted, source, lengths)) {
      for (const int64_t token : sentence.front().tokens) {
        EXPECT_TRUE((candidates == token).any().item<bool>()) << "token " << token << " not a candidate";
        ++drawn;
      }
    }
  }
  EXPECT_GT(drawn, 0);
}

}  // namespace
}  // namespace tfm
