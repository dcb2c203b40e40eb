#pragma once
// Paired bootstrap resampling (Koehn, 2004) exactly as sacreBLEU 2.6.0's --paired-bs runs it, so
// that "is system B's BLEU really different from A's?" gets sacreBLEU's answer: the same resamples
// (NumPy's default_rng(seed).choice), the same float32 arithmetic on resampled statistics, the
// same 95% interval and p-value.
#include <cstdint>
#include <optional>
#include <vector>

#include "metrics/bleu.h"
#include "metrics/chrf.h"

namespace tfm {

struct PairedBootstrapOptions {
  int64_t samples = 1000;  // resamples of the test set (sacreBLEU's --paired-bs-n)
  uint64_t seed = 12345;   // sacreBLEU's default (its SACREBLEU_SEED)
};

/// One system's result for one metric.
struct BootstrapScore {
  double score = 0.0;  // on the test set as it is
  double mean = 0.0;   // over the resamples
  double ci = 0.0;     // half the width of the resamples' central 95%
  /// Against the baseline: the share of resamples whose difference, centred, exceeds the actual
  /// one ((count + 1) / (samples + 1)). None for the baseline itself.
  std::optional<double> p_value;
};

/// systems[s][i]: system s's statistics for segment i; systems[0] is the baseline. Returns one
/// result per system, in order. Every system needs the same number of segments, at least one
/// (std::invalid_argument otherwise).
std::vector<BootstrapScore> paired_bootstrap_bleu(const std::vector<std::vector<BleuStats>>& systems,
                                                  const BleuOptions& options, const PairedBootstrapOptions& test);
std::vector<BootstrapScore> paired_bootstrap_chrf(const std::vector<std::vector<ChrfStats>>& systems,
                                                  const ChrfOptions& options, const PairedBootstrapOptions& test);

/// sacreBLEU's --confidence for one system: its score, and the mean and 95% half-width of its
/// resamples (the same resamples as the paired test's; the mean taken exactly, as Python's
/// statistics.mean takes it). No p-value.
BootstrapScore bootstrap_interval_bleu(const std::vector<BleuStats>& segments, const BleuOptions& options,
                                       const PairedBootstrapOptions& test);
BootstrapScore bootstrap_interval_chrf(const std::vector<ChrfStats>& segments, const ChrfOptions& options,
                                       const PairedBootstrapOptions& test);

/// NumPy's sum of a float or double array (pairwise in blocks of 128, 8 accumulators), whose
/// rounding sacreBLEU's means inherit.
template <typename Real>
Real numpy_sum(const Real* values, int64_t count);

}  // namespace tfm
