#include "model/shortlist.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "model/model_file.h"
#include "model/shortlist_coverage.h"
#include "tests/test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

using Pairs = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;

Pairs random_corpus(int64_t vocab, int64_t pairs, uint32_t seed) {
  std::mt19937 random(seed);
  // Skewed draws, so frequencies and co-occurrences differ (and some tie).
  std::uniform_int_distribution<int64_t> length(1, 8);
  std::geometric_distribution<int64_t> skew(0.08);
  const auto draw = [&] { return kNumSpecialIds + skew(random) % (vocab - kNumSpecialIds); };
  Pairs corpus;
  for (int64_t i = 0; i < pairs; ++i) {
    std::vector<int64_t> source(length(random)), target(length(random));
    std::generate(source.begin(), source.end(), draw);
    std::generate(target.begin(), target.end(), draw);
    corpus.emplace_back(source, target);
  }
  return corpus;
}

/// The definition, the slow way: sets of tokens per pair, counts in maps, a full sort.
struct Reference {
  std::vector<int64_t> frequent;                       // sorted
  std::map<int64_t, std::vector<int64_t>> candidates;  // per source, sorted
};

Reference reference_shortlist(const Pairs& corpus, const ShortlistOptions& options) {
  std::map<int64_t, int64_t> target_count;
  std::map<std::pair<int64_t, int64_t>, int64_t> together;
  for (const auto& [source, target] : corpus) {
    const std::set<int64_t> s(source.begin(), source.end()), t(target.begin(), target.end());
    for (const int64_t y : t) ++target_count[y];
    for (const int64_t x : s) {
      for (const int64_t y : t) ++together[{x, y}];
    }
  }
  std::vector<std::pair<int64_t, int64_t>> by_count;  // (-count, id)
  for (const auto& [id, count] : target_count) by_count.emplace_back(-count, id);
  std::sort(by_count.begin(), by_count.end());
  Reference reference;
  for (size_t i = 0; i < by_count.size() && static_cast<int64_t>(i) < options.frequent; ++i) {
    reference.frequent.push_back(by_count[i].second);
  }
  std::sort(reference.frequent.begin(), reference.frequent.end());
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> ranked;  // source -> (-together, target)
  for (const auto& [key, count] : together) {
    if (!std::binary_search(reference.frequent.begin(), reference.frequent.end(), key.second)) {
      ranked[key.first].emplace_back(-count, key.second);
    }
  }
  for (auto& [source, list] : ranked) {
    std::sort(list.begin(), list.end());
    auto& kept = reference.candidates[source];
    for (size_t i = 0; i < list.size() && static_cast<int64_t>(i) < options.per_source; ++i) {
      kept.push_back(list[i].second);
    }
    std::sort(kept.begin(), kept.end());
  }
  return reference;
}

Shortlist build(const Pairs& corpus, int64_t vocab, const ShortlistOptions& options) {
  ShortlistBuilder builder(vocab);
  for (const auto& [source, target] : corpus) builder.add(source, target);
  return builder.build(options);
}

TEST(Shortlist, WithoutIterationsBuilderKeepsTheMostFrequentCooccurrencesAsTheDefinitionSays) {
  const int64_t vocab = 60;
  const auto corpus = random_corpus(vocab, 400, 7);
  for (const ShortlistOptions options :
       {ShortlistOptions{5, 8, 0}, ShortlistOptions{1, 0, 0}, ShortlistOptions{100, 3, 0}}) {
    const auto shortlist = build(corpus, vocab, options);
    const auto reference = reference_shortlist(corpus, options);
    EXPECT_EQ(shortlist.frequent(), reference.frequent);
    for (int64_t s = 0; s < vocab; ++s) {
      const auto found = reference.candidates.find(s);
      const std::vector<int64_t> expected =
          found == reference.candidates.end() ? std::vector<int64_t>{} : found->second;
      EXPECT_EQ(shortlist.candidates_of(s), expected) << "source token " << s << ", per_source " << options.per_source;
    }
  }
}

/// IBM Model 1 the textbook way, in maps: p(t | s) after `iterations` EM iterations, with a null
/// source word, from uniform.
std::map<std::pair<int64_t, int64_t>, double> reference_model1(const Pairs& corpus, int iterations) {
  constexpr int64_t kNull = -1;
  std::map<std::pair<int64_t, int64_t>, double> p;  // (s, t) -> p(t | s)
  for (const auto& [source, target] : corpus) {
    for (const int64_t t : target) {
      p[{kNull, t}] = 1;
      for (const int64_t s : source) p[{s, t}] = 1;
    }
  }
  for (int iteration = 0; iteration < iterations; ++iteration) {
    std::map<std::pair<int64_t, int64_t>, double> count;
    std::map<int64_t, double> total;
    for (const auto& [source, target] : corpus) {
      std::vector<int64_t> with_null = source;
      with_null.push_back(kNull);
      for (const int64_t t : target) {
        double z = 0;
        for (const int64_t s : with_null) z += p[{s, t}];
        for (const int64_t s : with_null) {
          count[{s, t}] += p[{s, t}] / z;
          total[s] += p[{s, t}] / z;
        }
      }
    }
    for (auto& [key, value] : p) value = count[key] / total[key.first];
  }
  return p;
}

TEST(Shortlist, WithIterationsBuilderKeepsTheTargetsModel1FindsMostLikely) {
  const int64_t vocab = 40;
  const auto corpus = random_corpus(vocab, 300, 11);
  const ShortlistOptions options{4, 3, 3};
  const auto shortlist = build(corpus, vocab, options);
  const auto p = reference_model1(corpus, static_cast<int>(options.iterations));
  const auto& frequent = shortlist.frequent();
  int64_t checked = 0;
  for (int64_t s = kNumSpecialIds; s < vocab; ++s) {
    // Every kept target at least as likely as every target left out (up to rounding: ties break
    // on co-occurrence counts), and as many kept as the options allow.
    const auto kept = shortlist.candidates_of(s);
    std::vector<double> kept_p, dropped_p;
    for (const auto& [key, value] : p) {
      if (key.first != s || std::binary_search(frequent.begin(), frequent.end(), key.second)) continue;
      (std::binary_search(kept.begin(), kept.end(), key.second) ? kept_p : dropped_p).push_back(value);
    }
    EXPECT_EQ(static_cast<int64_t>(kept_p.size()), static_cast<int64_t>(kept.size())) << "source " << s;
    if (!dropped_p.empty()) {
      EXPECT_EQ(static_cast<int64_t>(kept.size()), options.per_source) << "source " << s;
      EXPECT_GE(*std::min_element(kept_p.begin(), kept_p.end()),
                *std::max_element(dropped_p.begin(), dropped_p.end()) - 1e-9)
          << "source " << s;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);  // the test compared real rankings
}

TEST(Shortlist, Model1CreditsATargetToTheTokenItTranslatesNotToEveryTokenBesideIt) {
  // 25 translates 11 (alone in 6 pairs) and is in every pair of 10, whose translation 20 is in two
  // of its three: by co-occurrence 10's best is 25, by Model 1 it is 20.
  Pairs corpus = {{{11, 10}, {25, 20}}, {{11, 10}, {25, 20}}, {{11, 10}, {25, 21}}};
  for (int i = 0; i < 6; ++i) corpus.push_back({{11}, {25}});
  EXPECT_EQ(build(corpus, 30, ShortlistOptions{1, 0, 0}).candidates_of(10), std::vector<int64_t>{25});
  EXPECT_EQ(build(corpus, 30, ShortlistOptions{1, 0, 5}).candidates_of(10), std::vector<int64_t>{20});
  EXPECT_EQ(build(corpus, 30, ShortlistOptions{1, 0, 5}).candidates_of(11), std::vector<int64_t>{25});
}

TEST(Shortlist, CoverageCountsTheTargetTokensAmongTheirSentencesCandidates) {
  const Pairs corpus = {{{10}, {20, 24}}, {{10, 11}, {20, 21, 22, 24}}, {{12}, {23, 24}}, {{13}, {24}}};
  const auto shortlist = build(corpus, 30, ShortlistOptions{2, 1, 0});  // 10: 20 21; 11: 20 21; 12: 23; +24
  ShortlistCoverage coverage;
  coverage.add(shortlist, {10}, {20, 22, 24, kEosId});  // 22 left out; eos is special: 3 of 4
  coverage.add(shortlist, {12, 13}, {23, 23, 29});      // 13 has 24 only (frequent): 2 of 3
  EXPECT_EQ(coverage.sentences, 2);
  EXPECT_EQ(coverage.target_tokens, 7);
  EXPECT_EQ(coverage.covered_tokens, 5);
  EXPECT_NEAR(coverage.covered_share(), 5.0 / 7.0, 1e-12);
  // Candidates: the 4 specials, 24, then 20 21 (7), and 23 (6).
  EXPECT_EQ(coverage.candidates, 13);
  EXPECT_EQ(coverage.most_candidates, 7);
  EXPECT_NEAR(coverage.mean_candidates(), 6.5, 1e-12);
}

TEST(Shortlist, CandidatesAreTheSpecialsTheFrequentAndEachSourceTokensListSorted) {
  // Token 10 always with 20; 11 with 20, 21 and 22; 12 with 23 (less often than 24, the frequent one).
  const Pairs corpus = {{{10}, {20, 24}}, {{10, 11}, {20, 21, 22, 24}}, {{12}, {23, 24}}, {{13}, {24}}};
  const auto shortlist = build(corpus, 30, ShortlistOptions{2, 1, 0});
  EXPECT_EQ(shortlist.frequent(), std::vector<int64_t>{24});
  EXPECT_EQ(shortlist.candidates_of(10), (std::vector<int64_t>{20, 21}));  // 20 twice; 21 and 22 tie: lower id
  EXPECT_EQ(shortlist.candidates_of(11), (std::vector<int64_t>{20, 21}));  // 20, 21, 22 once each: lower ids
  // A batch of two sentences (ids, eos, pad): each sentence's own list, specials first, sorted,
  // the shorter padded with -1.
  const auto source = torch::tensor(std::vector<int64_t>{12, 11, kEosId, 10, kEosId, kPadId}).view({2, 3});
  const auto ids = shortlist.candidates(source);
  ASSERT_EQ(ids.sizes(), (std::vector<int64_t>{2, 8}));
  const std::vector<int64_t> got(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  EXPECT_EQ(got, (std::vector<int64_t>{kPadId, kUnkId, kBosId, kEosId, 20, 21, 23, 24,     // 12 and 11
                                       kPadId, kUnkId, kBosId, kEosId, 20, 21, 24, -1}));  // 10 alone
  // A sentence's list does not depend on the batch it is in.
  const auto alone = shortlist.candidates(source.slice(0, 1, 2));
  EXPECT_TRUE(torch::equal(alone.squeeze(0), ids[1].slice(0, 0, 7)));
}

TEST(Shortlist, SharedTargetsAreTheSpecialsTheFrequentThenTheMostListed) {
  // Vocabulary 12, specials 0-3, frequent 11. Source 4 lists 5, 6, 7; 5 lists 6, 7; 6 lists 7, 8; 7
  // lists 9: 7 is listed by three tokens, 6 by two, 5, 8 and 9 by one (ties: the lower id).
  const Shortlist shortlist(12, {11}, {0, 0, 0, 0, 0, 3, 5, 7, 8, 8, 8, 8, 8}, {5, 6, 7, 6, 7, 7, 8, 9});
  const auto ids = [](const torch::Tensor& t) {
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  };
  EXPECT_EQ(ids(shortlist.shared_targets(5)), (std::vector<int64_t>{0, 1, 2, 3, 11}));
  EXPECT_EQ(ids(shortlist.shared_targets(7)), (std::vector<int64_t>{0, 1, 2, 3, 6, 7, 11}));
  EXPECT_EQ(ids(shortlist.shared_targets(8)), (std::vector<int64_t>{0, 1, 2, 3, 5, 6, 7, 11}));
  EXPECT_EQ(shortlist.shared_targets(100).numel(), 12);  // never more than the vocabulary
  EXPECT_EQ(shortlist.shared_targets(0).numel(), 0);
}

TEST(Shortlist, OneWrittenBeforeCalibrationReadsWithoutACorrection) {
  // The layout files had before the correction: the same four entries, no fifth.
  torch::serialize::OutputArchive archive, stored;
  stored.write("vocab_size", c10::IValue(int64_t{6}));
  stored.write("frequent", torch::tensor(std::vector<int64_t>{5}));
  stored.write("offsets", torch::tensor(std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1}));
  stored.write("targets", torch::tensor(std::vector<int32_t>{4}, torch::kInt));
  archive.write("shortlist", stored);
  std::ostringstream bytes;
  archive.save_to(bytes);
  torch::serialize::InputArchive input;
  std::istringstream in(bytes.str());
  input.load_from(in);
  torch::serialize::InputArchive inner;
  ASSERT_TRUE(input.try_read("shortlist", inner));
  const auto shortlist = Shortlist::read(inner, 6, "old.pt");
  EXPECT_EQ(shortlist.candidates_of(4), std::vector<int64_t>{4});
  EXPECT_EQ(shortlist.rest_correction(), 0.0);
  Shortlist corrected = shortlist;
  EXPECT_THROW(corrected.set_rest_correction(std::nan("")), std::invalid_argument);
}

TEST(Shortlist, PaddingAddsNoCandidatesEvenWhereTheShortlistListsSomeForIt) {
  // Vocabulary 8: pad (0) lists 6, token 4 lists 5. A file could hold a list for pad; a sentence's
  // candidates must still not depend on how much its batch pads it.
  const Shortlist shortlist(8, {}, {0, 1, 1, 1, 1, 2, 2, 2, 2}, {6, 5});
  const auto padded = torch::tensor(std::vector<int64_t>{4, kEosId, kPadId, 4, 7, kEosId}).view({2, 3});
  const auto alone = torch::tensor(std::vector<int64_t>{4, kEosId}).view({1, 2});
  const auto ids = shortlist.candidates(padded);
  EXPECT_TRUE(torch::equal(ids[0].slice(0, 0, 5), shortlist.candidates(alone)[0]));
  EXPECT_FALSE((ids[0] == 6).any().item<bool>()) << ids;
}

TEST(Shortlist, RejectsPiecesThatDoNotFitTogether) {
  EXPECT_THROW(Shortlist(4, {}, {0, 0, 0}, {}), std::invalid_argument);       // offsets too short
  EXPECT_THROW(Shortlist(2, {}, {0, 2, 1}, {1, 1}), std::invalid_argument);   // decreasing
  EXPECT_THROW(Shortlist(2, {}, {0, 1, 1}, {5}), std::invalid_argument);      // id outside
  EXPECT_THROW(Shortlist(2, {7}, {0, 0, 0}, {}), std::invalid_argument);      // frequent outside
  EXPECT_THROW(ShortlistBuilder(5).add({1, 9}, {2}), std::invalid_argument);  // token outside
  EXPECT_THROW(ShortlistBuilder(5).build(ShortlistOptions{0, 1}), std::invalid_argument);
  EXPECT_THROW(ShortlistBuilder(5).build(ShortlistOptions{1, 1, -1}), std::invalid_argument);
}

TEST(Shortlist, TravelsInTheModelFileAndOldFilesHaveNone) {
  testing::TempDir dir;
  ModelConfig config = preset("tiny");
  config.vocab_size = 40;
  Transformer model(config);
  auto shortlist = build(random_corpus(40, 100, 3), 40, ShortlistOptions{4, 5});
  shortlist.set_rest_correction(0.0625);
  const auto with = (dir.path() / "with.pt").string();
  const auto without = (dir.path() / "without.pt").string();
  save_model_file(with, model, "tokenizer", shortlist);
  save_model_file(without, model, "tokenizer");
  const auto loaded = load_model_file(with, torch::kCPU);
  ASSERT_FALSE(loaded.shortlist.empty());
  EXPECT_EQ(loaded.shortlist.frequent(), shortlist.frequent());
  for (int64_t s = 0; s < 40; ++s) EXPECT_EQ(loaded.shortlist.candidates_of(s), shortlist.candidates_of(s));
  EXPECT_EQ(loaded.shortlist.rest_correction(), 0.0625);
  EXPECT_TRUE(load_model_file(without, torch::kCPU).shortlist.empty());

  // A shortlist for another vocabulary is refused, naming the file.
  const auto other = build(random_corpus(50, 100, 3), 50, ShortlistOptions{4, 5});
  const auto mismatched = (dir.path() / "mismatched.pt").string();
  save_model_file(mismatched, model, "tokenizer", other);
  try {
    load_model_file(mismatched, torch::kCPU);
    FAIL() << "a shortlist over 50 tokens loaded into a 40-token model";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(mismatched + ": the shortlist covers a vocabulary of 50"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tfm
