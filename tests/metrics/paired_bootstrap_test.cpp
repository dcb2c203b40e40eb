#include "metrics/paired_bootstrap.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "metrics/paired_bootstrap_report.h"
#include "metrics/signature.h"
#include "tests/bleu_golden_data.h"
#include "text/segment_reader.h"

namespace tfm {
namespace {

/// perturb_drop_en's hypothesis (the baseline), and two better systems: the same with every third
/// and with every second line replaced by its reference.
struct ThreeSystems {
  std::vector<std::vector<std::string>> systems;
  std::vector<std::vector<std::string>> refs;

  std::vector<std::vector<BleuStats>> bleu_stats() const {
    std::vector<std::vector<BleuStats>> stats;
    for (const auto& hyps : systems) stats.push_back(segment_bleu_stats(hyps, refs, BleuOptions{}));
    return stats;
  }
  std::vector<std::vector<ChrfStats>> chrf_stats() const {
    std::vector<std::vector<ChrfStats>> stats;
    for (const auto& hyps : systems) stats.push_back(segment_chrf_stats(hyps, refs, ChrfOptions{}));
    return stats;
  }
};

ThreeSystems three_systems() {
  const auto dir = testing::bleu_data_dir() / "perturb_drop_en";
  ThreeSystems data;
  const auto hyp = read_segments((dir / "hyp.txt").string());
  const auto ref = read_segments((dir / "ref.txt").string());
  data.refs = {ref};
  data.systems = {hyp, hyp, hyp};
  for (size_t i = 0; i < hyp.size(); ++i) {
    if (i % 3 == 0) data.systems[1][i] = ref[i];
    if (i % 2 == 0) data.systems[2][i] = ref[i];
  }
  return data;
}

// Expected values: sacreBLEU 2.6.0 with NumPy 2.4.6, full precision, from
//   PairedTest([("base", hyp), ("s2", s2), ("s3", s3)], {"BLEU": BLEU(), "chrF": CHRF()}, [ref],
//              test_type="bs", n_samples=N)()
// with s2 and s3 built as three_systems() builds them.

TEST(PairedBootstrap, BleuMatchesSacrebleusPairedTest) {
  TFM_REQUIRE_DATA("testdata/bleu/perturb_drop_en/hyp.txt");
  const auto stats = three_systems().bleu_stats();
  const BleuOptions options;
  const auto results = paired_bootstrap_bleu(stats, options, PairedBootstrapOptions{});
  ASSERT_EQ(results.size(), 3U);
  EXPECT_NEAR(results[0].score, 81.38588781769727, 1e-9);
  EXPECT_NEAR(results[0].mean, 81.33984841329048, 1e-9);
  EXPECT_NEAR(results[0].ci, 4.8955042547033045, 1e-9);
  EXPECT_FALSE(results[0].p_value.has_value());
  EXPECT_NEAR(results[1].score, 88.55701985190125, 1e-9);
  EXPECT_NEAR(results[1].mean, 88.52897329747802, 1e-9);
  EXPECT_NEAR(results[1].ci, 4.811935743942833, 1e-9);
  EXPECT_DOUBLE_EQ(*results[1].p_value, 2.0 / 1001);
  EXPECT_NEAR(results[2].mean, 94.07000145140063, 1e-9);
  EXPECT_NEAR(results[2].ci, 3.283978095952577, 1e-9);
  EXPECT_DOUBLE_EQ(*results[2].p_value, 1.0 / 1001);

  PairedBootstrapOptions seven;
  seven.samples = 7;
  const auto few = paired_bootstrap_bleu(stats, options, seven);
  EXPECT_NEAR(few[0].mean, 80.6297435241476, 1e-9);
  EXPECT_NEAR(few[0].ci, 3.631385317647286, 1e-9);
  EXPECT_NEAR(few[1].mean, 88.26692546182063, 1e-9);
  EXPECT_NEAR(few[1].ci, 4.391179646073262, 1e-9);
  EXPECT_DOUBLE_EQ(*few[1].p_value, 1.0 / 8);
  EXPECT_NEAR(few[2].mean, 93.84711411319644, 1e-9);
}

TEST(PairedBootstrap, ChrfMatchesSacrebleusFloat32Resamples) {
  TFM_REQUIRE_DATA("testdata/bleu/perturb_drop_en/hyp.txt");
  const auto stats = three_systems().chrf_stats();
  const ChrfOptions options;
  const auto results = paired_bootstrap_chrf(stats, options, PairedBootstrapOptions{});
  ASSERT_EQ(results.size(), 3U);
  EXPECT_NEAR(results[0].score, 88.67447082048278, 1e-9);
  // sacreBLEU's chrF resamples are float32, so are their mean and interval: equal as floats.
  EXPECT_EQ(static_cast<float>(results[0].mean), 88.62806701660156F);
  EXPECT_EQ(static_cast<float>(results[0].ci), 3.372314453125F);
  EXPECT_NEAR(results[1].score, 92.97360146578404, 1e-9);
  EXPECT_EQ(static_cast<float>(results[1].mean), 92.9294662475586F);
  EXPECT_EQ(static_cast<float>(results[1].ci), 3.262359619140625F);
  EXPECT_DOUBLE_EQ(*results[1].p_value, 1.0 / 1001);
  EXPECT_EQ(static_cast<float>(results[2].mean), 95.87889862060547F);
  EXPECT_EQ(static_cast<float>(results[2].ci), 2.4067344665527344F);

  PairedBootstrapOptions seven;
  seven.samples = 7;
  const auto few = paired_bootstrap_chrf(stats, options, seven);
  EXPECT_EQ(static_cast<float>(few[0].mean), 88.55158233642578F);
  EXPECT_EQ(static_cast<float>(few[0].ci), 1.7397689819335938F);
  EXPECT_EQ(static_cast<float>(few[1].mean), 93.00132751464844F);
  EXPECT_EQ(static_cast<float>(few[2].ci), 2.3299827575683594F);
  EXPECT_DOUBLE_EQ(*few[2].p_value, 1.0 / 8);
}

TEST(PairedBootstrap, ConfidenceTakesTheExactMeanAsSacrebleusCorpusScore) {
  // sacreBLEU 2.6.0: BLEU().corpus_score(hyp, [ref], n_bootstrap=1000) and the same for CHRF();
  // its --confidence takes statistics.mean, where the paired test takes NumPy's mean.
  TFM_REQUIRE_DATA("testdata/bleu/perturb_drop_en/hyp.txt");
  const auto data = three_systems();
  const auto bleu = bootstrap_interval_bleu(data.bleu_stats()[0], BleuOptions{}, PairedBootstrapOptions{});
  EXPECT_NEAR(bleu.score, 81.38588781769727, 1e-9);
  EXPECT_NEAR(bleu.mean, 81.3398484132905, 1e-12);
  EXPECT_NEAR(bleu.ci, 4.8955042547033045, 1e-9);
  EXPECT_FALSE(bleu.p_value.has_value());
  const auto chrf = bootstrap_interval_chrf(data.chrf_stats()[0], ChrfOptions{}, PairedBootstrapOptions{});
  EXPECT_EQ(static_cast<float>(chrf.mean), 88.6280746459961F);  // NumPy's mean: 88.62806701660156
  EXPECT_EQ(static_cast<float>(chrf.ci), 3.372314453125F);
}

TEST(PairedBootstrap, AResampleIsTheTestSetDrawnWithReplacement) {
  // One segment scoring 100 and one scoring 0 BLEU-wise: every resample is 0, 1 or 2 copies of
  // the good one, so the resampled scores take three values and the mean lies between.
  const std::vector<std::vector<std::string>> refs = {{"a b c d e", "f g h i j"}};
  const BleuOptions options;
  const auto good = segment_bleu_stats({"a b c d e", "f g h i j"}, refs, options);
  const auto half = segment_bleu_stats({"a b c d e", "x y z w v"}, refs, options);
  const auto results = paired_bootstrap_bleu({good, half}, options, PairedBootstrapOptions{});
  EXPECT_DOUBLE_EQ(results[0].mean, 100.0);
  EXPECT_DOUBLE_EQ(results[0].ci, 0.0);
  EXPECT_GT(results[1].mean, 0.0);
  EXPECT_LT(results[1].mean, 100.0);
  EXPECT_GT(results[1].ci, 0.0);
}

TEST(PairedBootstrap, RejectsSystemsOfDifferentLengths) {
  const std::vector<BleuStats> two(2), three(3);
  EXPECT_THROW(paired_bootstrap_bleu({two, three}, BleuOptions{}, PairedBootstrapOptions{}), std::invalid_argument);
  EXPECT_THROW(paired_bootstrap_bleu({{}, {}}, BleuOptions{}, PairedBootstrapOptions{}), std::invalid_argument);
  PairedBootstrapOptions none;
  none.samples = 0;
  EXPECT_THROW(paired_bootstrap_bleu({two, two}, BleuOptions{}, none), std::invalid_argument);
}

TEST(PairedBootstrapReport, SignatureCarriesTheResamplesAndSeedAfterNrefs) {
  PairedBootstrapOptions test;
  EXPECT_EQ(paired_bootstrap_signature(bleu_signature(BleuOptions{}, 1, "2.6.0"), test),
            "nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");
  EXPECT_EQ(paired_bootstrap_signature(chrf_signature(ChrfOptions{}, 1, "2.6.0"), test),
            "nrefs:1|bs:1000|seed:12345|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0");
}

TEST(PairedBootstrapReport, LinesMarkSignificantDifferences) {
  BootstrapScore baseline{28.3358, 28.3295, 1.3947, std::nullopt};
  BootstrapScore close{28.2279, 28.2220, 1.3872, 0.0290};
  BootstrapScore far{20.0, 20.1, 1.2, 0.5};
  const PairedMetricResult bleu{"BLEU", "nrefs:1|bs:1000|seed:12345", {baseline, close, far}};
  const auto lines = paired_bootstrap_lines({"base.txt", "a.txt", "b.txt"}, {bleu}, PairedBootstrapOptions{}, 2);
  ASSERT_EQ(lines.size(), 6U);  // header, column names, three systems, a signature
  EXPECT_NE(lines[2].find("baseline: base.txt"), std::string::npos);
  EXPECT_NE(lines[2].find("28.34 (μ = 28.33 ± 1.39)"), std::string::npos);
  EXPECT_NE(lines[3].find("28.23 (μ = 28.22 ± 1.39)  p = 0.0290*"), std::string::npos);
  EXPECT_NE(lines[4].find("p = 0.5000"), std::string::npos);
  EXPECT_EQ(lines[4].find('*'), std::string::npos);
  EXPECT_EQ(lines[5], "BLEU|nrefs:1|bs:1000|seed:12345");
}

}  // namespace
}  // namespace tfm
