#include "serve/server_metrics.h"

#include <sstream>

namespace tfm {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

void header(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

std::string Histogram::render(const std::string& name) const {
  std::ostringstream out;
  uint64_t cumulative = 0;
  for (size_t b = 0; b < bounds_.size(); ++b) {
    cumulative += counts_[b];
    out << name << "_bucket{le=\"" << number(bounds_[b]) << "\"} " << cumulative << '\n';
  }
  out << name << "_bucket{le=\"+Inf\"} " << count_ << '\n';
  out << name << "_sum " << number(sum_) << '\n' << name << "_count " << count_ << '\n';
  return out.str();
}

ServerMetrics::ServerMetrics()
    : batch_sentences_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}),
      step_sentences_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}),
      request_seconds_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}) {}

void ServerMetrics::request_done(const std::string& path, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{path, status}];
  request_seconds_.observe(seconds);
}

void ServerMetrics::sentences_translated(int64_t sentences) {
  std::lock_guard<std::mutex> lock(mutex_);
  sentences_ += static_cast<uint64_t>(sentences);
}

void ServerMetrics::batch_decoded(const BatchReport& report) {
  std::lock_guard<std::mutex> lock(mutex_);
  decode_seconds_ += report.seconds;
  if (report.sentences > 0) {
    ++batches_;
    batch_sentences_.observe(static_cast<double>(report.sentences));
  }
  if (report.running > 0) {
    if (report.running > report.sentences) joined_ += report.sentences;  // others were in flight
    ++steps_;
    step_sentences_.observe(static_cast<double>(report.running));
  }
}

std::string ServerMetrics::render(size_t queued_sentences, size_t lanes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  header(out, "tfm_requests_total", "counter", "HTTP requests answered, by path and status.");
  for (const auto& [key, count] : requests_) {
    out << "tfm_requests_total{path=\"" << key.first << "\",status=\"" << key.second << "\"} " << count << '\n';
  }
  header(out, "tfm_sentences_total", "counter", "Sentences translated.");
  out << "tfm_sentences_total " << sentences_ << '\n';
  header(out, "tfm_queue_sentences", "gauge", "Sentences waiting for a batch.");
  out << "tfm_queue_sentences " << queued_sentences << '\n';
  header(out, "tfm_lanes", "gauge",
         "Ways of decoding held: each model's default, and the search settings of requests in flight.");
  out << "tfm_lanes " << lanes << '\n';
  header(out, "tfm_batches_total", "counter",
         "Batches started: whole batches, and groups of sentences that joined a running batch.");
  out << "tfm_batches_total " << batches_ << '\n';
  header(out, "tfm_decode_seconds_total", "counter", "Time spent decoding.");
  out << "tfm_decode_seconds_total " << number(decode_seconds_) << '\n';
  header(out, "tfm_batch_sentences", "histogram", "Sentences per batch started.");
  out << batch_sentences_.render("tfm_batch_sentences");
  header(out, "tfm_running_batch_steps_total", "counter", "Decoding steps of running batches.");
  out << "tfm_running_batch_steps_total " << steps_ << '\n';
  header(out, "tfm_joined_sentences_total", "counter", "Sentences that joined a batch already running.");
  out << "tfm_joined_sentences_total " << joined_ << '\n';
  header(out, "tfm_running_batch_sentences", "histogram", "Sentences a running batch decoded per step.");
  out << step_sentences_.render("tfm_running_batch_sentences");
  header(out, "tfm_request_duration_seconds", "histogram", "Time from a request's arrival to its answer.");
  out << request_seconds_.render("tfm_request_duration_seconds");
  return out.str();
}

}  // namespace tfm
