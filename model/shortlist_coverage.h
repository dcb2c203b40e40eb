#pragma once
#include <cstdint>
#include <vector>

#include "model/shortlist.h"

namespace tfm {

/// How well a shortlist covers held-out translations: the share of their target tokens that their
/// sentence's candidates hold (a token outside them cannot be produced), and what the candidates
/// cost. A reference's tokens the full model would not have produced either count as misses, so a
/// model's own output (`tfm translate` without the shortlist) measures its loss more closely.
struct ShortlistCoverage {
  int64_t sentences = 0;
  int64_t target_tokens = 0;
  int64_t covered_tokens = 0;
  int64_t candidates = 0;       // summed over the sentences
  int64_t most_candidates = 0;  // of one sentence

  /// Adds one pair (ids without bos/eos).
  void add(const Shortlist& shortlist, const std::vector<int64_t>& source, const std::vector<int64_t>& target);
  double covered_share() const { return target_tokens == 0 ? 1.0 : double(covered_tokens) / double(target_tokens); }
  double mean_candidates() const { return sentences == 0 ? 0.0 : double(candidates) / double(sentences); }
};

}  // namespace tfm
