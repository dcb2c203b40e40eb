#pragma once
// Timing for the micro-benchmarks under bench/ (built on demand, never by tests).
#include <algorithm>
#include <chrono>

namespace tfm::bench {

/// Milliseconds per call of `call`, the best of three rounds of `repeats` calls.
template <typename Call>
double best_ms(int repeats, Call call) {
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i) call();
    const std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - start;
    best = std::min(best, spent.count() / repeats);
  }
  return best;
}

}  // namespace tfm::bench
