#pragma once
#include <cstdint>
#include <vector>

namespace tfm {

/// A finished translation. `tokens` excludes bos and eos; `score` = log_prob / lp(|tokens| + 1).
struct Hypothesis {
  std::vector<int64_t> tokens;
  double score = 0.0;
  double log_prob = 0.0;
};

/// GNMT's length penalty ((5 + length) / 6)^alpha (Wu et al., 2016), length counting eos.
double length_penalty(int64_t length, double alpha);

/// A hypothesis of `tokens` (eos not included) with total `log_prob`, scored under penalty `alpha`.
Hypothesis make_hypothesis(std::vector<int64_t> tokens, double log_prob, double alpha);

}  // namespace tfm
