#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "decode/id_translator.h"

namespace tfm {

/// One sentence's result from the decoding thread.
struct SentenceResult {
  IdTranslation translation;
  std::vector<int64_t> alignment;  // hard alignment of the best hypothesis, when asked for
};

/// What one request hands the queue: its sentences as ids, all for one lane. A lane is one way of
/// decoding (a model and its search settings): only sentences of one lane share a batch.
struct DecodeJob {
  size_t lane = 0;
  std::vector<std::vector<int64_t>> sources;
  bool alignment = false;
  /// Kept alive until the last of the job's sentences has left the queue and its batch, even when
  /// the request stopped waiting: what keeps the lane's id valid (ServedModels' LaneLease).
  std::shared_ptr<const void> keep;
};

/// A submitted job: its results arrive as the batches holding its sentences finish.
class PendingJob {
 public:
  explicit PendingJob(size_t sentences) : results_(sentences), missing_(sentences) {}
  /// Waits until every sentence is decoded (true) or `deadline` passes (false: the job is then
  /// cancelled, so sentences not yet in a batch are never decoded).
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  /// The results, in the job's order; valid once wait_until returned true.
  std::vector<SentenceResult>& results() { return results_; }
  /// The decoding error that ended the job, if any (rethrown by the caller).
  std::exception_ptr error() const;

 private:
  friend class BatchingQueue;
  std::shared_ptr<const void> keep_;  // DecodeJob::keep: every queued sentence holds the job
  std::vector<SentenceResult> results_;
  size_t missing_;
  bool cancelled_ = false;
  std::exception_ptr error_;
  mutable std::mutex mutex_;
  std::condition_variable done_;
};

/// Thrown by submit() when the queue holds --max-queue-sentences already.
class QueueFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BatchingOptions {
  int64_t max_tokens = 6000;                   // source tokens (with eos) taken into one batch
  std::chrono::microseconds batch_wait{5000};  // the longest a batch waits to fill
  int64_t max_queue_sentences = 10000;         // sentences waiting at most; more is QueueFull
  bool join_running = false;                   // sentences queued meanwhile join a running batch (continuous batching)
};

/// What the decoding thread reports (for /metrics): a whole batch, or one step of a running one.
struct BatchReport {
  size_t sentences = 0;  // sentences started together (a batch, or those that joined before this step)
  double seconds = 0.0;  // decoding time
  size_t running = 0;    // a running batch's step: the sentences it decoded; 0 for a whole batch
};

/// A running batch of one lane that sentences join between decoding steps (continuous
/// batching): a request that arrives while others decode starts at the next step instead of
/// waiting for the whole batch to end.
class DecodeStream {
 public:
  struct Finished {
    int64_t tag = 0;
    SentenceResult result;
  };
  virtual ~DecodeStream() = default;
  /// Starts `sources` (ids); `alignment[i]` whether sentence i wants its hard alignment; tags[i]
  /// names it in step()'s results.
  virtual void add(std::vector<std::vector<int64_t>> sources, const std::vector<bool>& alignment,
                   const std::vector<int64_t>& tags) = 0;
  /// One step for every sentence in flight; those that finished.
  virtual std::vector<Finished> step() = 0;
  virtual size_t sentences() const = 0;
  /// Source subwords (with </s>) in flight, bounded by BatchingOptions::max_tokens.
  virtual int64_t source_tokens() const = 0;
};

/// Batching across requests: requests queue their sentences; the decoding thread (the one in run())
/// takes the oldest sentence's lane and as many queued sentences of that lane as fit in
/// max_tokens, decodes them together, and hands each request its results as soon as its last
/// sentence is done: where the lane can (OpenStream), step by step as sentences finish, else when
/// the batch ends. With join_running, the batch keeps running: sentences of the lane queued
/// meanwhile join it at the next step, within max_tokens, and each leaves when done. A batch
/// waits (up to batch_wait after its oldest sentence arrived) only while other requests are
/// arriving (announced with Arrival) or fewer requests are queued than the last batch held (under
/// concurrent load, its clients are about to send again), so a lone client never pays for it.
class BatchingQueue {
 public:
  /// Decodes one batch of one lane: sources as ids, `alignment[i]` whether sentence i wants its
  /// hard alignment. Returns one result per source, in order. Runs on the decoding thread only.
  using Decode = std::function<std::vector<SentenceResult>(size_t lane, std::vector<std::vector<int64_t>> sources,
                                                           const std::vector<bool>& alignment)>;
  using Observer = std::function<void(const BatchReport&)>;
  /// A running batch for `lane`, or nullptr where the lane decodes whole batches (Decode).
  using OpenStream = std::function<std::unique_ptr<DecodeStream>(size_t lane)>;

  BatchingQueue(Decode decode, const BatchingOptions& options, Observer observer = {}, OpenStream open_stream = {});
  BatchingQueue(const BatchingQueue&) = delete;
  BatchingQueue& operator=(const BatchingQueue&) = delete;

  /// A request on its way to submit(): while any is alive, a batch that is not full may wait.
  class Arrival {
   public:
    explicit Arrival(BatchingQueue& queue);
    ~Arrival();
    Arrival(const Arrival&) = delete;
    Arrival& operator=(const Arrival&) = delete;

   private:
    friend class BatchingQueue;
    BatchingQueue& queue_;
    bool ended_ = false;  // submit() ended it along with queueing the request
  };

  /// Queues `job`'s sentences. Throws QueueFull when they do not fit within max_queue_sentences.
  /// `arrival`, the request's own, ends in the same step: the decoding thread then finds the
  /// request queued and no longer on its way, and starts at once instead of waking twice.
  std::shared_ptr<PendingJob> submit(DecodeJob job, Arrival* arrival = nullptr);
  /// Sentences queued and not yet taken into a batch.
  size_t queued_sentences() const;
  /// Decodes batches on the calling thread until finish() was called and nothing is queued. The
  /// process's main thread should call it: LibTorch's OpenMP threads belong to the thread that
  /// starts them, and a second team on the same cores makes each team stop spinning and sleep
  /// between parallel regions (decoding ran 2.5x slower in a thread of its own).
  void run();
  /// A helper decoding thread's loop: as run(), but it takes a batch only while run()'s thread is
  /// decoding one (or to empty the queue at finish()), so a lone request always goes to run()'s
  /// thread, which then may have every core (share_cores).
  void run_helper();
  /// `main_cores(busy_helpers)` runs on run()'s thread before each batch, and before a step when
  /// more helpers decode than at its last call: it gives run()'s thread the cores the helpers
  /// leave idle. At a batch's start every helper counts as busy while other requests are queued
  /// or on their way (a helper is about to take them).
  void share_cores(std::function<void(size_t busy_helpers)> main_cores);
  /// Lets run() return once the queue is empty; later submits throw QueueFull.
  void finish();

 private:
  struct Item {
    std::shared_ptr<PendingJob> job;
    size_t index;  // the sentence within its job
    size_t lane;
    int64_t tokens;  // source subwords + eos
    bool alignment;
    std::vector<int64_t> source;
    std::chrono::steady_clock::time_point arrived;
  };

  /// run() (helper false) and run_helper() (true).
  void decode_batches(bool helper);
  /// On run()'s thread (`main`), once its batch has no sentence left to decode: helpers stop taking batches.
  void main_done(bool main);
  /// Before run()'s thread (`main`) starts a batch or a step: main_cores_ with the helpers busy
  /// now, at a batch's start or when more are busy than it was last told.
  void fit_cores(bool main, bool batch_start);
  /// `last_batch_requests`: distinct requests in the calling thread's previous batch (updated).
  std::vector<Item> take_batch(std::unique_lock<std::mutex>& lock, bool helper, size_t& last_batch_requests);
  /// Whether helpers may take what is queued now: while run()'s thread decodes, or while one of
  /// them waits for its batch to fill. Called with the lock held.
  bool helpers_may_take() const { return main_busy_ || helpers_filling_ > 0; }
  /// Wakes run()'s thread, and the helpers where `helpers` (helpers_may_take() under the lock).
  void notify_takers(bool helpers);
  std::condition_variable& wake(bool helper) { return helper ? helpers_wake_ : main_wake_; }
  /// Queued sentences of `lane`, oldest first, while they fit in `tokens` (the first one
  /// regardless, with first_regardless: a sentence longer than a batch still gets decoded).
  std::vector<Item> take_from_lane(size_t lane, int64_t tokens, bool first_regardless);
  void decode(std::vector<Item> batch, bool main);
  /// Decodes `batch` and every sentence of its lane that joins it, until none is left. Called
  /// and returns with the lock released; `main`: on run()'s thread.
  void decode_running(DecodeStream& stream, std::vector<Item> batch, bool main);
  class InFlight;  // a running batch's sentences by their tags (batching_queue.cpp)
  /// Starts `items` in the running batch; false when that failed (their requests then have the error).
  static bool start_in(DecodeStream& stream, std::vector<Item> items, InFlight& in_flight);
  /// The queued sentences that join the running batch of `lane` now (none until enough wait).
  std::vector<Item> take_joiners(size_t lane, const DecodeStream& stream);
  /// Hands a sentence's result, or the error that ended its batch, to its request.
  static void deliver(Item& item, SentenceResult* result, const std::exception_ptr& error);
  int64_t lane_tokens(size_t lane) const;
  size_t lane_requests(size_t lane) const;  // distinct requests with sentences queued in `lane`
  void drop_cancelled();

  Decode decode_;
  BatchingOptions options_;
  Observer observer_;
  OpenStream open_stream_;
  mutable std::mutex mutex_;
  std::condition_variable main_wake_;     // run()'s thread waits on it
  std::condition_variable helpers_wake_;  // run_helper() threads wait on it
  std::deque<Item> queue_;
  int arriving_ = 0;
  bool stopping_ = false;
  bool main_busy_ = false;               // run()'s thread is decoding a batch
  std::atomic<size_t> busy_helpers_{0};  // run_helper() threads decoding a batch
  std::function<void(size_t)> main_cores_;
  size_t helpers_ = 0;          // run_helper() threads
  size_t helpers_filling_ = 0;  // run_helper() threads waiting for their batch to fill
  size_t main_start_busy_ = 0;  // helpers counted busy when run()'s thread took its batch
  size_t main_cores_busy_ = 0;  // busy helpers main_cores_ was last told of (run()'s thread alone)
};

}  // namespace tfm
