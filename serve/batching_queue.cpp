#include "serve/batching_queue.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace tfm {
namespace {

/// The requests among the `items` that `keep` accepts. A request's sentences lie side by side
/// (submit() queues them at once), so a new request starts wherever the job changes.
template <typename Items, typename Keep>
size_t count_requests(const Items& items, Keep keep) {
  size_t count = 0;
  const PendingJob* last = nullptr;
  for (const auto& item : items) {
    if (!keep(item) || item.job.get() == last) continue;
    last = item.job.get();
    ++count;
  }
  return count;
}

/// Sentences join a running batch once at least 1/kJoinFraction as many are queued as run in it
/// (BENCHMARKS.md: joining at every step, or at 1/2 or 1/8, decoded fewer sentences a second).
constexpr size_t kJoinFraction = 4;

}  // namespace

bool PendingJob::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (done_.wait_until(lock, deadline, [&] { return missing_ == 0; })) return true;
  cancelled_ = true;
  return false;
}

std::exception_ptr PendingJob::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

BatchingQueue::BatchingQueue(Decode decode, const BatchingOptions& options, Observer observer, OpenStream open_stream)
    : decode_(std::move(decode)),
      options_(options),
      observer_(std::move(observer)),
      open_stream_(std::move(open_stream)) {}

BatchingQueue::Arrival::Arrival(BatchingQueue& queue) : queue_(queue) {
  std::lock_guard<std::mutex> lock(queue_.mutex_);
  ++queue_.arriving_;
}

BatchingQueue::Arrival::~Arrival() {
  bool helpers = false;
  {
    std::lock_guard<std::mutex> lock(queue_.mutex_);
    if (ended_) return;
    --queue_.arriving_;
    helpers = queue_.helpers_may_take();
  }
  queue_.notify_takers(helpers);
}

std::shared_ptr<PendingJob> BatchingQueue::submit(DecodeJob job, Arrival* arrival) {
  auto pending = std::make_shared<PendingJob>(job.sources.size());
  pending->keep_ = std::move(job.keep);
  const auto now = std::chrono::steady_clock::now();
  bool helpers = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw QueueFull("the server is shutting down");
    if (static_cast<int64_t>(queue_.size() + job.sources.size()) > options_.max_queue_sentences) {
      throw QueueFull("the queue is full (" + std::to_string(queue_.size()) + " sentences waiting, at most " +
                      std::to_string(options_.max_queue_sentences) + ")");
    }
    for (size_t i = 0; i < job.sources.size(); ++i) {
      const auto tokens = static_cast<int64_t>(job.sources[i].size()) + 1;
      queue_.push_back({pending, i, job.lane, tokens, job.alignment, std::move(job.sources[i]), now});
    }
    if (arrival != nullptr && !arrival->ended_) {
      arrival->ended_ = true;
      --arriving_;
    }
    helpers = helpers_may_take();
  }
  notify_takers(helpers);
  return pending;
}

size_t BatchingQueue::queued_sentences() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void BatchingQueue::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  main_wake_.notify_all();
  helpers_wake_.notify_all();
}

void BatchingQueue::notify_takers(bool helpers) {
  // Helpers sleep through a lone client's requests: each needless wake-up of theirs moved the
  // main thread's OpenMP team across cores, and after an idle pause its steps then waited on each
  // other (BENCHMARKS.md).
  main_wake_.notify_all();
  if (helpers) helpers_wake_.notify_all();
}

void BatchingQueue::drop_cancelled() {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [](const Item& item) {
                                std::lock_guard<std::mutex> lock(item.job->mutex_);
                                return item.job->cancelled_;
                              }),
               queue_.end());
}

int64_t BatchingQueue::lane_tokens(size_t lane) const {
  int64_t tokens = 0;
  for (const auto& item : queue_) {
    if (item.lane == lane) tokens += item.tokens;
    if (tokens >= options_.max_tokens) break;
  }
  return tokens;
}

void BatchingQueue::run() { decode_batches(/*helper=*/false); }

void BatchingQueue::run_helper() { decode_batches(/*helper=*/true); }

void BatchingQueue::share_cores(std::function<void(size_t busy_helpers)> main_cores) {
  main_cores_ = std::move(main_cores);
}

void BatchingQueue::fit_cores(bool main, bool batch_start) {
  if (!main || !main_cores_) return;
  // Cores are taken only at a batch's start, and only when no other request is about (a helper
  // would take it at once), and given back as helpers start: widening into every gap between a
  // helper's batches cost 3-7% of the sentences a second at 32 clients (BENCHMARKS.md).
  const size_t busy = busy_helpers_.load();
  const size_t assumed = batch_start ? std::max(busy, main_start_busy_) : busy;
  if (batch_start || assumed > main_cores_busy_) {
    main_cores_(assumed);
    main_cores_busy_ = assumed;
  }
}

void BatchingQueue::main_done(bool main) {
  if (!main) return;
  std::lock_guard<std::mutex> lock(mutex_);
  main_busy_ = false;
}

void BatchingQueue::decode_batches(bool helper) {
  if (helper) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++helpers_;
  }
  // Each decoding thread waits for as many requests as its own last batch held: with several
  // threads, another's large batch says nothing about who will come back to this one.
  size_t last_batch_requests = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake(helper).wait(lock, [&] { return stopping_ || (!queue_.empty() && (!helper || main_busy_)); });
    drop_cancelled();
    if (queue_.empty()) {
      if (stopping_) return;  // everything queued has been decoded
      continue;
    }
    auto batch = take_batch(lock, helper, last_batch_requests);
    if (batch.empty()) continue;
    if (helper) {
      ++busy_helpers_;
    } else {
      main_busy_ = true;
      // Requests still queued or being read will go to the helpers: count them all as busy.
      main_start_busy_ = !queue_.empty() || arriving_ > 0 ? helpers_ : 0;
    }
    const bool has_queued = !queue_.empty();
    lock.unlock();
    if (!helper && has_queued) helpers_wake_.notify_all();  // what did not fit in this batch
    std::unique_ptr<DecodeStream> stream;
    if (open_stream_) {
      try {
        stream = open_stream_(batch.front().lane);
      } catch (...) {  // decode() then reports the lane's error to its requests
      }
    }
    if (stream) {
      decode_running(*stream, std::move(batch), !helper);
    } else {
      decode(std::move(batch), !helper);
    }
    lock.lock();
    if (helper) {
      --busy_helpers_;
    } else {
      main_busy_ = false;
    }
  }
}

size_t BatchingQueue::lane_requests(size_t lane) const {
  return count_requests(queue_, [lane](const Item& item) { return item.lane == lane; });
}

std::vector<BatchingQueue::Item> BatchingQueue::take_batch(std::unique_lock<std::mutex>& lock, bool helper,
                                                           size_t& last_batch_requests) {
  // Wait for company only where it is on its way: requests being read, or fewer requests queued
  // than the last batch held (its clients, just answered, are sending their next ones). A lone
  // client's last batch held one request: it never waits.
  const size_t first_lane = queue_.front().lane;
  if (helper) ++helpers_filling_;
  wake(helper).wait_until(lock, queue_.front().arrived + options_.batch_wait, [&] {
    return stopping_ || queue_.empty() || lane_tokens(first_lane) >= options_.max_tokens ||
           (arriving_ == 0 && lane_requests(first_lane) >= last_batch_requests);
  });
  if (helper) --helpers_filling_;
  drop_cancelled();
  std::vector<Item> batch;
  if (queue_.empty()) return batch;
  batch = take_from_lane(queue_.front().lane, options_.max_tokens, /*first_regardless=*/true);
  last_batch_requests = count_requests(batch, [](const Item&) { return true; });
  return batch;
}

std::vector<BatchingQueue::Item> BatchingQueue::take_from_lane(size_t lane, int64_t tokens, bool first_regardless) {
  std::vector<Item> taken;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->lane != lane) {
      ++it;
      continue;
    }
    if (it->tokens > tokens && !(first_regardless && taken.empty())) break;
    tokens -= it->tokens;
    taken.push_back(std::move(*it));
    it = queue_.erase(it);
  }
  return taken;
}

class BatchingQueue::InFlight {
 public:
  int64_t put(Item item) {
    if (free_.empty()) {
      items_.emplace_back(std::move(item));
      return static_cast<int64_t>(items_.size()) - 1;
    }
    const int64_t tag = free_.back();
    free_.pop_back();
    items_[tag] = std::move(item);
    return tag;
  }
  Item take(int64_t tag) {
    Item item = std::move(*items_.at(tag));
    items_[tag].reset();
    free_.push_back(tag);
    return item;
  }
  /// Ends every sentence still in flight with `error`.
  void fail_all(const std::exception_ptr& error) {
    for (size_t tag = 0; tag < items_.size(); ++tag) {
      if (!items_[tag]) continue;
      Item item = take(static_cast<int64_t>(tag));
      deliver(item, nullptr, error);
    }
  }

 private:
  std::vector<std::optional<Item>> items_;  // by tag
  std::vector<int64_t> free_;               // tags of finished sentences, for reuse
};

void BatchingQueue::deliver(Item& item, SentenceResult* result, const std::exception_ptr& error) {
  PendingJob& job = *item.job;
  std::lock_guard<std::mutex> lock(job.mutex_);
  if (result != nullptr) {
    job.results_[item.index] = std::move(*result);
  } else if (!job.error_) {
    job.error_ = error;
  }
  if (--job.missing_ == 0) job.done_.notify_all();
}

bool BatchingQueue::start_in(DecodeStream& stream, std::vector<Item> items, InFlight& in_flight) {
  std::vector<std::vector<int64_t>> sources;
  std::vector<bool> alignment;
  std::vector<int64_t> tags;
  for (auto& item : items) {
    sources.push_back(std::move(item.source));
    alignment.push_back(item.alignment);
    tags.push_back(in_flight.put(std::move(item)));
  }
  try {
    stream.add(std::move(sources), alignment, tags);
    return true;
  } catch (...) {
    in_flight.fail_all(std::current_exception());
    return false;
  }
}

std::vector<BatchingQueue::Item> BatchingQueue::take_joiners(size_t lane, const DecodeStream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  drop_cancelled();
  // Starting sentences costs an encoder pass and a copy of the batch's caches whatever their
  // number, so they join in groups: once a quarter as many are queued as are running.
  const auto waiting = static_cast<size_t>(
      std::count_if(queue_.begin(), queue_.end(), [lane](const Item& item) { return item.lane == lane; }));
  // An older sentence of another lane ends the joining: that lane has the next batch.
  if (queue_.empty() || queue_.front().lane != lane || waiting * kJoinFraction < stream.sentences()) return {};
  return take_from_lane(lane, options_.max_tokens - stream.source_tokens(), /*first_regardless=*/false);
}

void BatchingQueue::decode_running(DecodeStream& stream, std::vector<Item> batch, bool main) {
  const size_t lane = batch.front().lane;
  InFlight in_flight;
  size_t joined = batch.size();
  auto begin = std::chrono::steady_clock::now();  // a step's report includes starting its joiners
  fit_cores(main, /*batch_start=*/true);
  if (!start_in(stream, std::move(batch), in_flight)) return;
  while (stream.sentences() > 0) {
    const size_t running = stream.sentences();
    std::vector<DecodeStream::Finished> finished;
    fit_cores(main, /*batch_start=*/false);
    try {
      finished = stream.step();
    } catch (...) {
      in_flight.fail_all(std::current_exception());
      return;
    }
    if (observer_) {
      observer_({joined, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(), running});
    }
    // Free before the last answers leave: a lone client's next request must find the main
    // thread idle, or a helper (on fewer cores) would take it.
    if (stream.sentences() == 0) main_done(main);
    for (auto& sentence : finished) {
      Item item = in_flight.take(sentence.tag);
      deliver(item, &sentence.result, nullptr);
    }
    std::vector<Item> joining;
    if (options_.join_running) joining = take_joiners(lane, stream);
    joined = joining.size();
    begin = std::chrono::steady_clock::now();
    if (!joining.empty()) fit_cores(main, /*batch_start=*/false);
    if (!joining.empty() && !start_in(stream, std::move(joining), in_flight)) return;
  }
}

void BatchingQueue::decode(std::vector<Item> batch, bool main) {
  std::vector<std::vector<int64_t>> sources;
  std::vector<bool> alignment;
  for (auto& item : batch) {
    sources.push_back(std::move(item.source));
    alignment.push_back(item.alignment);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<SentenceResult> results;
  std::exception_ptr error;
  fit_cores(main, /*batch_start=*/true);
  try {
    results = decode_(batch.front().lane, std::move(sources), alignment);
    if (results.size() != batch.size()) throw std::logic_error("a batch decoded into the wrong number of results");
  } catch (...) {
    error = std::current_exception();
  }
  if (observer_) {
    observer_({batch.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  }
  main_done(main);
  for (size_t i = 0; i < batch.size(); ++i) deliver(batch[i], error ? nullptr : &results[i], error);
}

}  // namespace tfm
