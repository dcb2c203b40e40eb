#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "serve/batching_queue.h"

namespace tfm {

/// A Prometheus histogram: cumulative bucket counts, their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// The exposition lines of metric `name` (without its # HELP/# TYPE lines).
  std::string render(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; the last is +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

/// What GET /metrics reports, in Prometheus' text format: requests by path and status, sentences,
/// batches and their sizes, decoding time, request latency, the queue's depth and the lanes held.
/// Thread-safe.
class ServerMetrics {
 public:
  ServerMetrics();
  void request_done(const std::string& path, int status, double seconds);
  void sentences_translated(int64_t sentences);
  void batch_decoded(const BatchReport& report);
  std::string render(size_t queued_sentences, size_t lanes) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t sentences_ = 0;
  uint64_t batches_ = 0;
  uint64_t steps_ = 0;
  uint64_t joined_ = 0;
  double decode_seconds_ = 0.0;
  Histogram batch_sentences_;
  Histogram step_sentences_;
  Histogram request_seconds_;
};

}  // namespace tfm
