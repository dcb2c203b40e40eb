// BatchingQueue with running batches (continuous batching): sentences queued while a batch
// decodes join it at its next step, within max_tokens and only from its lane.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "serve/batching_queue.h"
#include "tests/serve/queue_test_support.h"

namespace tfm {
namespace {

using testing::Clock;
using testing::job;
using testing::kForever;

/// Running batches whose sentences take as many steps as they have ids, and come back with
/// their source as source_ids. Records each add (lane, sentences, steps taken before it); while
/// closed, a step waits until open().
class ScriptedStreams {
 public:
  struct Add {
    size_t lane, sentences, after_steps;
    bool operator==(const Add& o) const {
      return lane == o.lane && sentences == o.sentences && after_steps == o.after_steps;
    }
  };

  class Stream : public DecodeStream {
   public:
    Stream(ScriptedStreams& owner, size_t lane) : owner_(owner), lane_(lane) {}
    void add(std::vector<std::vector<int64_t>> sources, const std::vector<bool>& /*alignment*/,
             const std::vector<int64_t>& tags) override {
      owner_.record({lane_, sources.size(), steps_});
      for (size_t i = 0; i < sources.size(); ++i) {
        tokens_ += static_cast<int64_t>(sources[i].size()) + 1;
        live_[tags[i]] = {std::move(sources[i]), 0};
      }
    }
    std::vector<Finished> step() override {
      owner_.gate_.pass();
      if (steps_ >= owner_.hold_from_) owner_.held_.pass();
      ++steps_;
      std::vector<Finished> done;
      for (auto it = live_.begin(); it != live_.end();) {
        auto& [source, taken] = it->second;
        if (++taken < static_cast<int64_t>(source.size())) {
          ++it;
          continue;
        }
        if (owner_.fail_) throw std::runtime_error("decoding failed");
        tokens_ -= static_cast<int64_t>(source.size()) + 1;
        Finished finished{it->first, {}};
        finished.result.translation.source_ids = std::move(source);
        done.push_back(std::move(finished));
        it = live_.erase(it);
      }
      return done;
    }
    size_t sentences() const override { return live_.size(); }
    int64_t source_tokens() const override { return tokens_; }

   private:
    ScriptedStreams& owner_;
    size_t lane_;
    size_t steps_ = 0;
    int64_t tokens_ = 0;
    std::map<int64_t, std::pair<std::vector<int64_t>, int64_t>> live_;  // tag -> (source, steps taken)
  };

  std::unique_ptr<DecodeStream> open_stream(size_t lane) { return std::make_unique<Stream>(*this, lane); }
  void close() { gate_.close(); }
  void open() { gate_.open(); }
  void fail() { fail_ = true; }
  /// Steps after the first `steps` of a stream wait until release().
  void hold_after(size_t steps) {
    hold_from_ = steps;
    held_.close();
  }
  void release() { held_.open(); }
  /// Waits until `count` adds have reached a stream.
  void wait_for_adds(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return adds_.size() >= count; });
  }
  std::vector<Add> adds() {
    std::lock_guard<std::mutex> lock(mutex_);
    return adds_;
  }
  /// The threads that started sentences.
  std::set<std::thread::id> threads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_;
  }

 private:
  void record(const Add& add) {
    std::lock_guard<std::mutex> lock(mutex_);
    adds_.push_back(add);
    threads_.insert(std::this_thread::get_id());
    changed_.notify_all();
  }
  testing::Gate gate_;
  testing::Gate held_;
  std::atomic<size_t> hold_from_{SIZE_MAX};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> fail_{false};
  std::vector<Add> adds_;
  std::set<std::thread::id> threads_;
};

class RunningBatchTest : public ::testing::Test {
 protected:
  static BatchingOptions joining() {
    BatchingOptions options;
    options.join_running = true;
    return options;
  }
  /// Lane 2 cannot run a batch that others join: it decodes whole batches (counted).
  void start(BatchingOptions options = joining()) {
    queue_ = std::make_unique<BatchingQueue>(
        [this](size_t /*lane*/, std::vector<std::vector<int64_t>> sources, const std::vector<bool>&) {
          ++whole_batches_;
          std::vector<SentenceResult> results(sources.size());
          for (size_t i = 0; i < sources.size(); ++i) results[i].translation.source_ids = std::move(sources[i]);
          return results;
        },
        options, [this](const BatchReport& report) { reports_.push_back(report); },
        [this](size_t lane) { return lane == 2 ? nullptr : streams_.open_stream(lane); });
    thread_ = std::thread([this] { queue_->run(); });
  }
  void TearDown() override {
    streams_.open();
    streams_.release();
    if (queue_) queue_->finish();
    if (thread_.joinable()) thread_.join();
  }
  static void expect_echo(PendingJob& pending, const std::vector<std::vector<int64_t>>& sources) {
    ASSERT_TRUE(pending.wait_until(Clock::now() + kForever));
    ASSERT_FALSE(pending.error());
    for (size_t i = 0; i < sources.size(); ++i) EXPECT_EQ(pending.results()[i].translation.source_ids, sources[i]);
  }

  ScriptedStreams streams_;
  std::unique_ptr<BatchingQueue> queue_;
  std::thread thread_;
  int whole_batches_ = 0;
  std::vector<BatchReport> reports_;  // written by the decoding thread, read after it joined
};

TEST_F(RunningBatchTest, SentencesQueuedDuringABatchJoinItAndLeaveWhenDone) {
  start();
  streams_.close();
  const std::vector<std::vector<int64_t>> long_one = {{1, 1, 1, 1, 1, 1}};
  auto first = queue_->submit(job(0, long_one));
  streams_.wait_for_adds(1);
  const std::vector<std::vector<int64_t>> short_one = {{2}};
  auto second = queue_->submit(job(0, short_one));
  streams_.open();
  expect_echo(*second, short_one);
  expect_echo(*first, long_one);
  queue_->finish();
  thread_.join();
  // The short sentence joined after the first step, not after the batch.
  EXPECT_EQ(streams_.adds(), (std::vector<ScriptedStreams::Add>{{0, 1, 0}, {0, 1, 1}}));
  EXPECT_EQ(whole_batches_, 0);
  ASSERT_EQ(reports_.size(), 6U);  // one per step
  EXPECT_EQ(reports_[0].sentences, 1U);
  EXPECT_EQ(reports_[1].sentences, 1U);  // the short one, joined before the second step
  EXPECT_EQ(reports_[1].running, 2U);
  EXPECT_EQ(reports_[2].running, 1U);
}

// Without joining, a batch runs alone, yet each request is answered when its sentences are done:
// the short request comes back while the long one's batch is held at its second step.
TEST_F(RunningBatchTest, WithoutJoiningEachRequestIsAnsweredWhenItsSentencesAreDone) {
  BatchingOptions options;
  options.batch_wait = std::chrono::hours(1);
  start(options);
  streams_.hold_after(1);
  const std::vector<std::vector<int64_t>> long_one = {{1, 1, 1}};
  const std::vector<std::vector<int64_t>> short_one = {{2}};
  std::shared_ptr<PendingJob> first, second;
  {
    BatchingQueue::Arrival arriving(*queue_);  // the batch waits for both
    first = queue_->submit(job(0, long_one));
    second = queue_->submit(job(0, short_one));
  }
  ASSERT_TRUE(second->wait_until(Clock::now() + std::chrono::seconds(60))) << "answered only when the batch ended";
  EXPECT_EQ(second->results()[0].translation.source_ids, short_one[0]);
  auto third = queue_->submit(job(0, {{3}}));  // queued while the batch runs: it must not join
  streams_.release();
  queue_->finish();  // the third's batch would wait an hour for company otherwise
  expect_echo(*first, long_one);
  expect_echo(*third, {{3}});
  thread_.join();
  EXPECT_EQ(streams_.adds(), (std::vector<ScriptedStreams::Add>{{0, 2, 0}, {0, 1, 0}}));
  EXPECT_EQ(whole_batches_, 0);
}

// A lone client sends its next request the moment its answer arrives, from within the batch's
// last step: the main thread must count as free by then, or a helper would take the request.
TEST_F(RunningBatchTest, ALoneClientsRequestsAllGoToTheMainThreadBesideAHelper) {
  start(BatchingOptions{});
  std::thread helper([this] { queue_->run_helper(); });
  for (int64_t r = 0; r < 50; ++r) expect_echo(*queue_->submit(job(0, {{r, r}})), {{r, r}});
  queue_->finish();
  thread_.join();
  helper.join();
  EXPECT_EQ(streams_.threads().size(), 1U);
  EXPECT_EQ(streams_.adds().size(), 50U);
}

TEST_F(RunningBatchTest, ARunningBatchHoldsAtMostMaxTokens) {
  BatchingOptions options = joining();
  options.max_tokens = 8;
  start(options);
  streams_.close();
  auto first = queue_->submit(job(0, {{1, 1, 1}}));  // 4 tokens, 3 steps
  streams_.wait_for_adds(1);
  auto rest = queue_->submit(job(0, {{2, 2, 2}, {3, 3, 3}}));  // 4 tokens each: one fits beside the first
  streams_.open();
  expect_echo(*rest, {{2, 2, 2}, {3, 3, 3}});
  queue_->finish();
  thread_.join();
  EXPECT_EQ(streams_.adds(), (std::vector<ScriptedStreams::Add>{{0, 1, 0}, {0, 1, 1}, {0, 1, 3}}));
}

TEST_F(RunningBatchTest, AnotherLanesSentenceEndsTheJoiningUntilItsTurn) {
  start();
  streams_.close();
  auto first = queue_->submit(job(0, {{1, 1, 1}}));
  streams_.wait_for_adds(1);
  auto other = queue_->submit(job(1, {{5}}));
  auto same = queue_->submit(job(0, {{2}}));
  streams_.open();
  expect_echo(*same, {{2}});
  expect_echo(*other, {{5}});
  queue_->finish();
  thread_.join();
  // Lane 1's sentence was older: lane 0's second sentence waits for the next batch of lane 0.
  EXPECT_EQ(streams_.adds(), (std::vector<ScriptedStreams::Add>{{0, 1, 0}, {1, 1, 0}, {0, 1, 0}}));
}

TEST_F(RunningBatchTest, ALaneThatCannotRunDecodesWholeBatches) {
  start();
  auto pending = queue_->submit(job(2, {{7, 7}, {8}}));
  expect_echo(*pending, {{7, 7}, {8}});
  queue_->finish();
  thread_.join();
  EXPECT_EQ(whole_batches_, 1);
  EXPECT_TRUE(streams_.adds().empty());
}

TEST_F(RunningBatchTest, ADecodingErrorReachesEveryRequestInTheBatch) {
  start();
  streams_.fail();
  auto pending = queue_->submit(job(0, {{1}, {2, 2}}));
  ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
  ASSERT_TRUE(pending->error());
  auto next = queue_->submit(job(0, {{3}}));  // the server goes on
  ASSERT_TRUE(next->wait_until(Clock::now() + kForever));
  EXPECT_TRUE(next->error());
}

}  // namespace
}  // namespace tfm
