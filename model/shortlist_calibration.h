#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "model/shortlist.h"
#include "model/transformer.h"

namespace tfm {

/// What a shortlist's softmax normalizer is off by, over held-out steps, and the correction that
/// takes the mean error to 0.
struct ShortlistCalibration {
  int64_t steps = 0;
  double correction = 0;   // nats: Shortlist::rest_correction
  double mean_before = 0;  // mean of (estimated - exact) log normalizer, uncorrected
  double mean_abs_before = 0;
  double mean_after = 0;  // with the correction
  double mean_abs_after = 0;
};

/// Measures a shortlist's estimated normalizer against the whole vocabulary's, step by step under
/// teacher forcing. The estimate of the left-out tokens' log-mass (model/shortlist_logits.h) is
/// exact only for normally distributed output rows; it ran 0.04-0.06 nats a step too small on
/// Multi30k's models (BENCHMARKS.md), which raises every listed token's log-probability alike and
/// so lengthens translations. The error is steady enough that one constant, measured here, removes
/// most of it.
class ShortlistCalibrator {
 public:
  /// model: float32 or bfloat16 on any device; `shortlist` over its vocabulary. Both must outlive this.
  ShortlistCalibrator(Transformer model, const Shortlist& shortlist);

  /// One batch of held-out pairs. source: [B, S], each sentence then eos then pad; target_in:
  /// [B, T], bos then the target sentence then pad (data/batching.h's collate). Every position
  /// of target_in that is not pad is one step.
  void add(const torch::Tensor& source, const torch::Tensor& target_in);
  /// Pairs of ids without bos or eos, batched here in order.
  void add_pairs(const std::vector<std::vector<int64_t>>& sources, const std::vector<std::vector<int64_t>>& targets);
  int64_t steps() const { return static_cast<int64_t>(exact_.size()); }

  /// The correction c that makes the mean of log(exp(listed) + exp(rest + c)) - exact over the
  /// steps 0 (found by bisection: the mean rises with c), and the errors before and after it.
  /// No steps, or no step with tokens left out: c = 0.
  ShortlistCalibration solve() const;

 private:
  Transformer model_;
  const Shortlist& shortlist_;
  RowMoments moments_;
  // Per step: log sum exp over the listed tokens, the left-out tokens' estimate, the exact normalizer.
  std::vector<double> listed_, rest_, exact_;
};

}  // namespace tfm
