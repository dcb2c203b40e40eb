#include "metrics/bleu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "metrics/score_report.h"
#include "metrics/signature.h"
#include "tests/bleu_golden_data.h"

namespace tfm {
namespace {

/// BLEU from precisions in percent, the textbook way: BP * geometric mean.
double bleu_of(std::vector<double> precisions, double bp = 1.0) {
  double log_sum = 0.0;
  for (const double p : precisions) log_sum += std::log(p);
  return bp * std::exp(log_sum / static_cast<double>(precisions.size()));
}

BleuOptions with_smoothing(SmoothMethod method) {
  BleuOptions options;
  options.smooth_method = method;
  return options;
}

// "a b c d" against "a b c e": matches 3/4, 2/3, 1/2 and 0/1; the 4-gram order is where the
// smoothing methods differ.
const std::vector<std::string> kHyp = {"a b c d"};
const std::vector<std::vector<std::string>> kRef = {{"a b c e"}};

TEST(Bleu, ExpSmoothingHalvesEachZeroMatchOrder) {
  const BleuScore score = corpus_bleu(kHyp, kRef, BleuOptions{});
  EXPECT_EQ(score.stats.matches, (std::array<int64_t, 4>{3, 2, 1, 0}));
  EXPECT_EQ(score.stats.totals, (std::array<int64_t, 4>{4, 3, 2, 1}));
  EXPECT_DOUBLE_EQ(score.precisions[3], 100.0 / (2 * 1));
  EXPECT_NEAR(score.score, bleu_of({75.0, 200.0 / 3, 50.0, 50.0}), 1e-9);
}

TEST(Bleu, FloorSmoothingReplacesZeroMatchesByTheValue) {
  EXPECT_NEAR(corpus_bleu(kHyp, kRef, with_smoothing(SmoothMethod::kFloor)).score,
              bleu_of({75.0, 200.0 / 3, 50.0, 100.0 * 0.1 / 1}), 1e-9);
  BleuOptions half = with_smoothing(SmoothMethod::kFloor);
  half.smooth_value = 0.5;
  EXPECT_NEAR(corpus_bleu(kHyp, kRef, half).score, bleu_of({75.0, 200.0 / 3, 50.0, 50.0}), 1e-9);
}

TEST(Bleu, AddKAddsToOrdersTwoToFour) {
  const BleuScore score = corpus_bleu(kHyp, kRef, with_smoothing(SmoothMethod::kAddK));
  EXPECT_NEAR(score.score, bleu_of({3.0 / 4 * 100, 3.0 / 4 * 100, 2.0 / 3 * 100, 1.0 / 2 * 100}), 1e-9);
  EXPECT_EQ(score.stats.matches[3], 0) << "reported counts are before smoothing";
}

TEST(Bleu, NoSmoothingGivesZeroForAZeroMatchOrder) {
  const BleuScore score = corpus_bleu(kHyp, kRef, with_smoothing(SmoothMethod::kNone));
  EXPECT_EQ(score.score, 0.0);
  EXPECT_DOUBLE_EQ(score.precisions[0], 75.0);
  EXPECT_EQ(score.precisions[3], 0.0);
}

TEST(Bleu, NoMatchAtAnyOrderIsZeroWhateverTheSmoothing) {
  for (const auto method : {SmoothMethod::kExp, SmoothMethod::kFloor, SmoothMethod::kAddK, SmoothMethod::kNone}) {
    const BleuScore score = corpus_bleu({"x y z w"}, {{"a b c d"}}, with_smoothing(method));
    EXPECT_EQ(score.score, 0.0) << smooth_method_name(method);
    EXPECT_EQ(score.precisions, (std::array<double, 4>{0, 0, 0, 0}));
  }
}

TEST(Bleu, EmptyHypothesisScoresZeroButCountsItsReference) {
  const BleuScore alone = corpus_bleu({""}, {{"a b"}}, BleuOptions{});
  EXPECT_EQ(alone.score, 0.0);
  EXPECT_EQ(alone.bp, 0.0);
  EXPECT_EQ(alone.stats.hyp_len, 0);
  EXPECT_EQ(alone.stats.ref_len, 2);

  const BleuScore mixed = corpus_bleu({"a b c d", ""}, {{"a b c d", "x y"}}, BleuOptions{});
  EXPECT_EQ(mixed.stats.hyp_len, 4);
  EXPECT_EQ(mixed.stats.ref_len, 6);
  EXPECT_DOUBLE_EQ(mixed.bp, std::exp(1.0 - 6.0 / 4.0));
  EXPECT_NEAR(mixed.score, 100.0 * mixed.bp, 1e-9);
}

TEST(Bleu, ShortSegmentIsZeroAsCorpusButHundredWithEffectiveOrder) {
  EXPECT_EQ(corpus_bleu({"a b c"}, {{"a b c"}}, BleuOptions{}).score, 0.0) << "no 4-grams at all";
  BleuOptions sentence;
  sentence.effective_order = true;
  EXPECT_NEAR(sentence_bleu("a b c", {"a b c"}, sentence).score, 100.0, 1e-9);
  EXPECT_EQ(sentence_bleu("x y z", {"a b c"}, sentence).score, 0.0);
}

TEST(Bleu, EffectiveOrderStillCountsZeroMatchOrdersBelowIt) {
  BleuOptions sentence;
  sentence.effective_order = true;
  // "a x c" vs "a b c": unigrams 2/3, bigrams 0/2 (exp: 100 / (2 * 2)), trigrams 0/1 (100 / (4 * 1)).
  EXPECT_NEAR(sentence_bleu("a x c", {"a b c"}, sentence).score, bleu_of({200.0 / 3, 25.0, 25.0}), 1e-9);
}

TEST(Bleu, MultipleReferencesClipByTheBestSingleReference) {
  const BleuScore score = corpus_bleu({"the the the the"}, {{"the cat"}, {"the the mat"}}, BleuOptions{});
  EXPECT_EQ(score.stats.matches[0], 2) << "clipped by the second reference's two 'the'";
  EXPECT_EQ(score.stats.ref_len, 3) << "the reference length closest to 4";
}

TEST(Bleu, ReferenceLengthTieGoesToTheShorterReference) {
  EXPECT_EQ(corpus_bleu({"a b c"}, {{"a b"}, {"a b c d"}}, BleuOptions{}).stats.ref_len, 2);
  EXPECT_EQ(corpus_bleu({"a b c"}, {{"a b c d"}, {"a b"}}, BleuOptions{}).stats.ref_len, 2);
}

TEST(Bleu, LowercaseFoldsFullUnicode) {
  BleuOptions options;
  options.effective_order = true;
  options.lowercase = true;
  EXPECT_NEAR(sentence_bleu("ÉCOLE À PARIS", {"école à paris"}, options).score, 100.0, 1e-9);
  options.lowercase = false;
  EXPECT_LT(sentence_bleu("ÉCOLE À PARIS", {"école à paris"}, options).score, 1.0);
}

TEST(Bleu, MismatchedStreamsAreRejected) {
  EXPECT_THROW(corpus_bleu({"a", "b"}, {{"a"}}, BleuOptions{}), std::invalid_argument);
  EXPECT_THROW(corpus_bleu({"a"}, {}, BleuOptions{}), std::invalid_argument);
}

TEST(Bleu, OptionsAreValidated) {
  EXPECT_EQ(parse_smooth_method("add-k"), SmoothMethod::kAddK);
  EXPECT_THROW(parse_smooth_method("add-n"), std::invalid_argument);
  BleuOptions options;
  options.smooth_value = 0.5;
  EXPECT_THROW(validate(options), std::invalid_argument) << "exp takes no value";
  options.smooth_method = SmoothMethod::kFloor;
  EXPECT_NO_THROW(validate(options));
  options.smooth_value = -1.0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.smooth_value = std::nan("");
  EXPECT_THROW(validate(options), std::invalid_argument);
}

TEST(BleuSignature, HasSacrebleuFieldsAndTfmVersion) {
  EXPECT_EQ(bleu_signature(BleuOptions{}, 1), "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-" TFM_VERSION);
  BleuOptions options;
  options.lowercase = true;
  options.effective_order = true;
  options.tokenizer = BleuTokenizer::kIntl;
  options.smooth_method = SmoothMethod::kFloor;
  EXPECT_EQ(bleu_signature(options, 2, "x"), "nrefs:2|case:lc|eff:yes|tok:intl|smooth:floor[0.10]|version:x");
  options.smooth_method = SmoothMethod::kAddK;
  options.smooth_value = 2;
  EXPECT_EQ(bleu_signature(options, 1, "x"), "nrefs:1|case:lc|eff:yes|tok:intl|smooth:add-k[2.00]|version:x");
}

TEST(BleuReport, PrintsLikeSacrebleu) {
  const BleuScore score = corpus_bleu(kHyp, kRef, BleuOptions{});
  const std::string details = "75.0/66.7/50.0/50.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)";
  EXPECT_EQ(bleu_details(score), details);
  EXPECT_EQ(bleu_line(score, ""), "BLEU = 59.46 " + details);
  EXPECT_EQ(bleu_line(score, "sig", 1), "BLEU|sig = 59.5 " + details);
  EXPECT_EQ(align_on_equals({"BLEU|ab = 1", "chrF2|abcd = 2"}),
            (std::vector<std::string>{"   BLEU|ab = 1", "chrF2|abcd = 2"}));
  const auto json = bleu_json(score, "nrefs:1|tok:13a");
  EXPECT_EQ(json["name"], "BLEU");
  EXPECT_EQ(json["nrefs"], "1");
  EXPECT_EQ(json["tok"], "13a");
  EXPECT_EQ(json["counts"], nlohmann::ordered_json::array({3, 2, 1, 0}));
  EXPECT_EQ(json.begin().key(), "name") << "sacreBLEU's key order";
}

// --- sacreBLEU 2.6.0 golden data (../shared/testdata/bleu) ---

BleuOptions options_from(const nlohmann::json& options) {
  BleuOptions result;
  result.tokenizer = parse_bleu_tokenizer(options.at("tokenize").get<std::string>());
  result.lowercase = options.at("lowercase").get<bool>();
  result.smooth_method = parse_smooth_method(options.at("smooth_method").get<std::string>());
  if (!options.at("smooth_value").is_null()) result.smooth_value = options.at("smooth_value").get<double>();
  result.effective_order = options.at("effective_order").get<bool>();
  return result;
}

/// Checks one score against an expected.json entry (a corpus run or a sentence-level segment).
void expect_matches(const BleuScore& score, const nlohmann::json& expected, const std::string& where,
                    testing::MaxDifference& difference) {
  difference.expect_near(score.score, expected.at("score").get<double>(), where + " score");
  for (size_t n = 0; n < 4; ++n) {
    difference.expect_near(score.precisions[n], expected.at("precisions")[n].get<double>(),
                           where + " precision " + std::to_string(n + 1));
    EXPECT_EQ(score.stats.matches[n], expected.at("counts")[n].get<int64_t>()) << where;
    EXPECT_EQ(score.stats.totals[n], expected.at("totals")[n].get<int64_t>()) << where;
  }
  difference.expect_near(score.bp, expected.at("bp").get<double>(), where + " bp");
  difference.expect_near(score.ratio, expected.at("ratio").get<double>(), where + " ratio");
  EXPECT_EQ(score.stats.hyp_len, expected.at("sys_len").get<int64_t>()) << where;
  EXPECT_EQ(score.stats.ref_len, expected.at("ref_len").get<int64_t>()) << where;
}

TEST(BleuGolden, EveryCaseMatchesSacrebleu) {
  TFM_REQUIRE_DATA("testdata/bleu/README.md");
  testing::MaxDifference difference;
  size_t cases = 0, runs = 0, segments = 0;
  for (const auto& golden : testing::load_golden_cases()) {
    ++cases;
    ASSERT_EQ(golden.hyps.size(), golden.expected.at("num_segments").get<size_t>()) << golden.name;
    for (const auto& run : golden.expected.at("bleu")) {
      ++runs;
      const std::string where = golden.name + "/" + run.at("id").get<std::string>();
      const BleuOptions options = options_from(run.at("options"));
      EXPECT_EQ(bleu_signature(options, golden.refs.size(), testing::kSacrebleuVersion), run.at("signature")) << where;
      if (run.at("options").at("level") == "corpus") {
        const BleuScore score = corpus_bleu(golden.hyps, golden.refs, options);
        expect_matches(score, run, where, difference);
        EXPECT_EQ(bleu_line(score, ""), run.at("verbose_score").get<std::string>()) << where;
        EXPECT_EQ(bleu_details(score), run.at("cli_output").at("verbose_score").get<std::string>()) << where;
        continue;
      }
      BleuOptions corpus_options = options;
      corpus_options.effective_order = false;
      for (size_t i = 0; i < golden.hyps.size(); ++i, ++segments) {
        std::vector<std::string> refs;
        for (const auto& stream : golden.refs) refs.push_back(stream[i]);
        const auto& expected = run.at("segments")[i];
        const std::string segment = where + " segment " + std::to_string(i + 1);
        expect_matches(sentence_bleu(golden.hyps[i], refs, options), expected, segment, difference);
        difference.expect_near(sentence_bleu(golden.hyps[i], refs, corpus_options).score,
                               expected.at("corpus_score_of_this_segment").get<double>(), segment + " as corpus");
      }
    }
  }
  EXPECT_GE(cases, 13u);
  std::cout << "[ golden  ] BLEU: " << cases << " cases, " << runs << " runs (" << segments
            << " sentence-level segments); max |difference| " << difference.value << " at " << difference.where << "\n";
}

}  // namespace
}  // namespace tfm
