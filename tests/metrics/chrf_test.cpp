#include "metrics/chrf.h"

#include <gtest/gtest.h>

#include <iostream>

#include "metrics/score_report.h"
#include "metrics/signature.h"
#include "tests/bleu_golden_data.h"

namespace tfm {
namespace {

ChrfOptions chrf_plus_plus() {
  ChrfOptions options;
  options.word_order = 2;
  return options;
}

TEST(Chrf, IdenticalTextScoresHundredAndIgnoresWhitespace) {
  EXPECT_NEAR(sentence_chrf("Das ist gut.", {"Das ist gut."}, ChrfOptions{}).score, 100.0, 1e-9);
  EXPECT_NEAR(sentence_chrf("a b  c", {"abc"}, ChrfOptions{}).score, 100.0, 1e-9) << "whitespace is removed";
}

TEST(Chrf, AveragesOnlyOrdersPresentInBothThenCombinesWithBeta) {
  // "abcd" vs "abce": orders 1..4 have n-grams (3/4, 2/3, 1/2, 0/1 matched), orders 5 and 6 none.
  const ChrfScore score = sentence_chrf("abcd", {"abce"}, ChrfOptions{});
  const double precision = (3.0 / 4 + 2.0 / 3 + 1.0 / 2 + 0.0) / 4;  // equal to recall here
  EXPECT_NEAR(score.score, 100.0 * precision, 1e-9);
  ASSERT_EQ(score.stats.size(), 6u);
  EXPECT_EQ(score.stats[4].hyp, 0);

  // Beta 2 weighs recall: "ab" vs "abcd" has precision 1 and recall 1/2 (orders 1 and 2).
  const double p = 1.0, r = (2.0 / 4 + 1.0 / 3) / 2;
  EXPECT_NEAR(sentence_chrf("ab", {"abcd"}, ChrfOptions{}).score, 100.0 * 5 * p * r / (4 * p + r), 1e-9);
}

TEST(Chrf, NoReferenceNgramsMeansNoHypothesisNgramsCounted) {
  const ChrfScore score = sentence_chrf("abc", {""}, ChrfOptions{});
  EXPECT_EQ(score.score, 0.0);
  EXPECT_EQ(score.stats[0].hyp, 0) << "sacreBLEU counts hypothesis n-grams only where the reference has some";
  EXPECT_EQ(sentence_chrf("", {"abc"}, ChrfOptions{}).score, 0.0);
}

TEST(Chrf, BestReferenceSuppliesTheStatistics) {
  const ChrfScore score = sentence_chrf("abc", {"xyz", "abc", "abc d"}, ChrfOptions{});
  EXPECT_NEAR(score.score, 100.0, 1e-9);
  EXPECT_EQ(score.stats[0].ref, 3) << "the second reference, the first of the two best";
}

TEST(Chrf, PlusPlusSplitsOnePunctuationCharacterOffWords) {
  // "(hi)" gives the words "(hi" and ")" (trailing punctuation first, sacreBLEU issue #124).
  const ChrfScore score = sentence_chrf("(hi) there", {"(hi there"}, chrf_plus_plus());
  ASSERT_EQ(score.stats.size(), 8u);
  EXPECT_EQ(score.stats[6].hyp, 3);    // "(hi" ")" "there"
  EXPECT_EQ(score.stats[6].ref, 3);    // "(" "hi" "there"
  EXPECT_EQ(score.stats[6].match, 1);  // "there"
}

TEST(Chrf, LowercaseOption) {
  ChrfOptions options;
  options.lowercase = true;
  EXPECT_NEAR(sentence_chrf("STRASSE", {"strasse"}, options).score, 100.0, 1e-9);
}

TEST(Chrf, NamesSignatureAndValidation) {
  EXPECT_EQ(chrf_name(ChrfOptions{}), "chrF2");
  EXPECT_EQ(chrf_name(chrf_plus_plus()), "chrF2++");
  EXPECT_EQ(chrf_signature(chrf_plus_plus(), 2, "x"), "nrefs:2|case:mixed|eff:yes|nc:6|nw:2|space:no|version:x");
  ChrfOptions options;
  options.word_order = -1;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.word_order = 1000;
  EXPECT_THROW(validate(options), std::invalid_argument);
  EXPECT_THROW(corpus_chrf({"a", "b"}, {{"a"}}, ChrfOptions{}), std::invalid_argument);
}

TEST(ChrfReport, LineAndJson) {
  const ChrfScore score = sentence_chrf("abcd", {"abce"}, ChrfOptions{});
  EXPECT_EQ(chrf_line(score, ChrfOptions{}, "sig"), "chrF2|sig = 47.92");
  const auto json = chrf_json(score, chrf_plus_plus(), "nrefs:1|nw:2");
  EXPECT_EQ(json["name"], "chrF2++");
  EXPECT_EQ(json["nw"], "2");
}

// --- sacreBLEU 2.6.0 golden data (../shared/testdata/bleu) ---

TEST(ChrfGolden, EveryCaseMatchesSacrebleu) {
  TFM_REQUIRE_DATA("testdata/bleu/README.md");
  testing::MaxDifference difference;
  size_t cases = 0, runs = 0;
  for (const auto& golden : testing::load_golden_cases()) {
    ++cases;
    for (const char* key : {"chrf", "chrf++", "chrf_lowercase"}) {
      if (!golden.expected.contains(key)) continue;
      ++runs;
      const auto& expected = golden.expected.at(key);
      const std::string where = golden.name + "/" + key;
      ChrfOptions options;
      options.char_order = expected.at("char_order").get<int>();
      options.word_order = expected.at("word_order").get<int>();
      options.beta = expected.at("beta").get<int>();
      options.lowercase = expected.at("lowercase").get<bool>();
      const ChrfScore score = corpus_chrf(golden.hyps, golden.refs, options);
      difference.expect_near(score.score, expected.at("score").get<double>(), where);
      EXPECT_EQ(chrf_name(options), expected.at("name")) << where;
      EXPECT_EQ(chrf_signature(options, golden.refs.size(), testing::kSacrebleuVersion), expected.at("signature"))
          << where;
      const auto& stats = expected.at("stats");
      ASSERT_EQ(score.stats.size(), stats.size()) << where;
      for (size_t i = 0; i < stats.size(); ++i) {
        EXPECT_EQ(score.stats[i].hyp, stats[i].at("hyp").get<int64_t>()) << where << " " << stats[i].at("order");
        EXPECT_EQ(score.stats[i].ref, stats[i].at("ref").get<int64_t>()) << where << " " << stats[i].at("order");
        EXPECT_EQ(score.stats[i].match, stats[i].at("match").get<int64_t>()) << where << " " << stats[i].at("order");
      }
    }
  }
  EXPECT_GE(cases, 13u);
  std::cout << "[ golden  ] chrF: " << cases << " cases, " << runs << " runs; max |difference| " << difference.value
            << " at " << difference.where << "\n";
}

}  // namespace
}  // namespace tfm
