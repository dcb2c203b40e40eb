#include "metrics/paired_bootstrap.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "metrics/numpy_random.h"

namespace tfm {

template <typename Real>
Real numpy_sum(const Real* values, int64_t count) {
  constexpr int64_t kBlock = 128;
  constexpr int64_t kLanes = 8;
  if (count < kLanes) {
    Real sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += values[i];
    return sum;
  }
  if (count <= kBlock) {
    Real lanes[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = values[j];
    int64_t i = kLanes;
    for (; i < count - count % kLanes; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] += values[i + j];
    }
    Real sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; i < count; ++i) sum += values[i];
    return sum;
  }
  int64_t half = count / 2;
  half -= half % kLanes;
  return numpy_sum(values, half) + numpy_sum(values + half, count - half);
}

template float numpy_sum<float>(const float*, int64_t);
template double numpy_sum<double>(const double*, int64_t);

namespace {

/// sacreBLEU takes the resamples' mean with NumPy in its paired tests and with Python's
/// statistics.mean for --confidence; the two can differ in the last bit.
enum class MeanRule { kNumpy, kExact };

template <typename Real>
Real numpy_mean(const std::vector<Real>& values) {
  return numpy_sum(values.data(), static_cast<int64_t>(values.size())) / static_cast<Real>(values.size());
}

/// The sum of `values` rounded once, as Python's math.fsum: Shewchuk's non-overlapping partials.
double exact_sum(const std::vector<double>& values) {
  std::vector<double> partials;
  for (double x : values) {
    size_t kept = 0;
    for (double y : partials) {
      if (std::abs(x) < std::abs(y)) std::swap(x, y);
      const double high = x + y;
      const double low = y - (high - x);
      if (low != 0.0) partials[kept++] = low;
      x = high;
    }
    partials.resize(kept);
    partials.push_back(x);
  }
  double sum = 0.0;
  for (auto it = partials.rbegin(); it != partials.rend(); ++it) sum += *it;  // largest first
  return sum;
}

/// Python's statistics.mean, which sacreBLEU's --confidence takes: the exact mean, rounded to the
/// scores' type (a double sum of float scores is exact; the one division rounds).
template <typename Real>
Real exact_mean(const std::vector<Real>& values) {
  const std::vector<double> widened(values.begin(), values.end());
  return static_cast<Real>(exact_sum(widened) / static_cast<double>(values.size()));
}

/// sacreBLEU's estimate_ci: the mean, and half the distance between the values n/40 from either
/// end of the sorted resample scores.
template <typename Real>
void estimate_interval(std::vector<Real> scores, MeanRule rule, BootstrapScore& result) {
  std::sort(scores.begin(), scores.end());
  const size_t lower = scores.size() / 40;
  const size_t upper = scores.size() - lower - 1;
  result.ci = static_cast<double>(Real(0.5) * (scores[upper] - scores[lower]));
  result.mean = static_cast<double>(rule == MeanRule::kNumpy ? numpy_mean(scores) : exact_mean(scores));
}

/// sacreBLEU's p-value: the resamples' absolute differences, centred on their mean, against the
/// actual absolute difference; +1 on both sides so that p is never 0.
template <typename Real>
double p_value(const std::vector<Real>& system, const std::vector<Real>& baseline, double actual_difference) {
  std::vector<Real> differences(system.size());
  for (size_t s = 0; s < system.size(); ++s) differences[s] = std::abs(system[s] - baseline[s]);
  const Real mean = numpy_mean(differences);
  const auto threshold = static_cast<Real>(actual_difference);  // NumPy compares in the array's type
  int64_t exceeding = 0;
  for (const Real difference : differences) exceeding += difference - mean > threshold ? 1 : 0;
  return static_cast<double>(exceeding + 1) / static_cast<double>(differences.size() + 1);
}

template <typename Stats>
void check_systems(const std::vector<std::vector<Stats>>& systems, const PairedBootstrapOptions& test) {
  if (systems.empty() || systems[0].empty()) throw std::invalid_argument("paired bootstrap: no segments to resample");
  for (const auto& system : systems) {
    if (system.size() != systems[0].size()) {
      throw std::invalid_argument("paired bootstrap: systems of " + std::to_string(systems[0].size()) + " and " +
                                  std::to_string(system.size()) + " segments");
    }
  }
  if (systems[0].size() > (uint64_t{1} << 32)) throw std::invalid_argument("paired bootstrap: too many segments");
  if (test.samples < 1) throw std::invalid_argument("paired bootstrap: at least one resample");
}

void add(BleuStats& sum, const BleuStats& stats) { sum += stats; }

void add(ChrfStats& sum, const ChrfStats& stats) { add_chrf_stats(sum, stats); }

/// The test for any metric. `score` gives the double score of summed statistics, `resample_score`
/// the score sacreBLEU gives a resample (in `Real`). Every system is scored on the same resamples:
/// sacreBLEU seeds a new generator with the same seed for each, so each draws the same indices.
/// (sacreBLEU sums the resampled statistics in float32, which is exact while sums stay below
/// 2^24; tfm sums them in integers.)
template <typename Real, typename Stats, typename Score, typename ResampleScore>
std::vector<BootstrapScore> paired_bootstrap(const std::vector<std::vector<Stats>>& systems,
                                             const PairedBootstrapOptions& test, MeanRule rule, Score score,
                                             ResampleScore resample_score) {
  check_systems(systems, test);
  const size_t segments = systems[0].size();
  const auto samples = static_cast<size_t>(test.samples);
  std::vector<std::vector<Real>> scores(systems.size(), std::vector<Real>(samples));  // [system][sample]
  NumpyRandom random(test.seed);
  std::vector<Stats> sums(systems.size());
  for (size_t sample = 0; sample < samples; ++sample) {
    std::fill(sums.begin(), sums.end(), Stats{});
    for (size_t i = 0; i < segments; ++i) {
      const uint32_t segment = random.below(segments);
      for (size_t s = 0; s < systems.size(); ++s) add(sums[s], systems[s][segment]);
    }
    for (size_t s = 0; s < systems.size(); ++s) scores[s][sample] = resample_score(sums[s]);
  }
  std::vector<BootstrapScore> results(systems.size());
  for (size_t s = 0; s < systems.size(); ++s) {
    Stats total{};
    for (const auto& stats : systems[s]) add(total, stats);
    results[s].score = score(total);
    estimate_interval(scores[s], rule, results[s]);
    if (s > 0) {
      results[s].p_value = p_value(scores[s], scores[0], std::abs(results[0].score - results[s].score));
    }
  }
  return results;
}

}  // namespace

std::vector<BootstrapScore> paired_bootstrap_bleu(const std::vector<std::vector<BleuStats>>& systems,
                                                  const BleuOptions& options, const PairedBootstrapOptions& test) {
  return paired_bootstrap<double>(
      systems, test, MeanRule::kNumpy, [&](const BleuStats& stats) { return compute_bleu(stats, options).score; },
      [&](const BleuStats& stats) { return compute_bleu_float32(stats, options).score; });
}

std::vector<BootstrapScore> paired_bootstrap_chrf(const std::vector<std::vector<ChrfStats>>& systems,
                                                  const ChrfOptions& options, const PairedBootstrapOptions& test) {
  return paired_bootstrap<float>(
      systems, test, MeanRule::kNumpy, [&](const ChrfStats& stats) { return chrf_f_score(stats, options); },
      [&](const ChrfStats& stats) { return chrf_f_score_float32(stats, options); });
}

BootstrapScore bootstrap_interval_bleu(const std::vector<BleuStats>& segments, const BleuOptions& options,
                                       const PairedBootstrapOptions& test) {
  return paired_bootstrap<double>(
      std::vector<std::vector<BleuStats>>{segments}, test, MeanRule::kExact,
      [&](const BleuStats& stats) { return compute_bleu(stats, options).score; },
      [&](const BleuStats& stats) { return compute_bleu_float32(stats, options).score; })[0];
}

BootstrapScore bootstrap_interval_chrf(const std::vector<ChrfStats>& segments, const ChrfOptions& options,
                                       const PairedBootstrapOptions& test) {
  return paired_bootstrap<float>(
      std::vector<std::vector<ChrfStats>>{segments}, test, MeanRule::kExact,
      [&](const ChrfStats& stats) { return chrf_f_score(stats, options); },
      [&](const ChrfStats& stats) { return chrf_f_score_float32(stats, options); })[0];
}

}  // namespace tfm
