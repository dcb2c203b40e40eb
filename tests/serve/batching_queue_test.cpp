#include "serve/batching_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/serve/queue_test_support.h"

namespace tfm {
namespace {

using testing::Clock;
using testing::job;
using testing::kForever;

/// A decoder that echoes each source as its result's source_ids and records every batch; while
/// closed, a batch that reaches it waits until open() (so a test can fill the queue meanwhile).
class ScriptedDecoder {
 public:
  std::vector<SentenceResult> decode(size_t lane, std::vector<std::vector<int64_t>> sources) {
    std::unique_lock<std::mutex> lock(mutex_);
    batches_.push_back({lane, sources.size()});
    changed_.notify_all();
    lock.unlock();
    gate_.pass();
    if (fail_) throw std::runtime_error("decoding failed");
    std::vector<SentenceResult> results(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) results[i].translation.source_ids = std::move(sources[i]);
    return results;
  }
  void close() { gate_.close(); }
  void open() { gate_.open(); }
  void fail() { fail_ = true; }
  /// Waits until `count` batches have reached the decoder.
  void wait_for_batches(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return batches_.size() >= count; });
  }
  std::vector<std::pair<size_t, size_t>> batches() {  // (lane, sentences) per batch
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
  }

 private:
  testing::Gate gate_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> fail_{false};
  std::vector<std::pair<size_t, size_t>> batches_;
};

/// A queue over a ScriptedDecoder, decoding on a thread of its own until the fixture ends.
class BatchingQueueTest : public ::testing::Test {
 protected:
  void start(BatchingOptions options = {}) {
    queue_ = std::make_unique<BatchingQueue>(
        [this](size_t lane, std::vector<std::vector<int64_t>> sources, const std::vector<bool>&) {
          return decoder_.decode(lane, std::move(sources));
        },
        options);
    thread_ = std::thread([this] { queue_->run(); });
  }
  void TearDown() override {
    decoder_.open();
    if (queue_) queue_->finish();
    if (thread_.joinable()) thread_.join();
  }
  ScriptedDecoder decoder_;
  std::unique_ptr<BatchingQueue> queue_;
  std::thread thread_;
};

TEST_F(BatchingQueueTest, AnswersEveryRequestWithItsOwnSentencesInOrder) {
  start();
  std::vector<std::thread> clients;
  std::vector<int> correct(8, 0);
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      for (int r = 0; r < 20; ++r) {
        std::vector<std::vector<int64_t>> sources = {{c, r}, {c, r, 7}, {c}};
        auto pending = queue_->submit(job(0, sources));
        ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
        bool same = true;
        for (size_t i = 0; i < sources.size(); ++i) same &= pending->results()[i].translation.source_ids == sources[i];
        correct[c] += same;
      }
    });
  }
  for (auto& client : clients) client.join();
  for (int c = 0; c < 8; ++c) EXPECT_EQ(correct[c], 20) << "client " << c;
}

TEST_F(BatchingQueueTest, TwoDecodingThreadsAnswerEveryRequestWithItsOwnSentences) {
  start();
  std::thread second([this] { queue_->run_helper(); });  // a helper beside the fixture's main thread
  std::vector<std::thread> clients;
  std::vector<int> correct(8, 0);
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      for (int r = 0; r < 20; ++r) {
        const std::vector<std::vector<int64_t>> sources = {{c, r}, {c}};
        auto pending = queue_->submit(job(static_cast<size_t>(c % 2), sources));
        ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
        correct[c] += pending->results()[0].translation.source_ids == sources[0] &&
                      pending->results()[1].translation.source_ids == sources[1];
      }
    });
  }
  for (auto& client : clients) client.join();
  queue_->finish();
  second.join();
  for (int c = 0; c < 8; ++c) EXPECT_EQ(correct[c], 20) << "client " << c;
}

TEST_F(BatchingQueueTest, SentencesThatQueuedDuringABatchShareTheNext) {
  start();
  decoder_.close();
  auto first = queue_->submit(job(0, {{1}}));
  decoder_.wait_for_batches(1);
  std::vector<std::shared_ptr<PendingJob>> later;
  for (int r = 0; r < 3; ++r) later.push_back(queue_->submit(job(0, {{2, r}})));
  decoder_.open();
  for (auto& pending : later) ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.batches(), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 3}}));
}

TEST_F(BatchingQueueTest, OnlySentencesOfOneLaneShareABatch) {
  start();
  decoder_.close();
  auto first = queue_->submit(job(0, {{1}}));
  decoder_.wait_for_batches(1);
  auto a = queue_->submit(job(0, {{2}}));
  auto b = queue_->submit(job(1, {{3}}));
  auto c = queue_->submit(job(0, {{4}}));
  decoder_.open();
  for (auto* pending : {&a, &b, &c}) ASSERT_TRUE((*pending)->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.batches(), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 2}, {1, 1}}));
}

TEST_F(BatchingQueueTest, ABatchHoldsAtMostMaxTokens) {
  BatchingOptions options;
  options.max_tokens = 8;  // two sentences of 3 subwords + eos
  start(options);
  decoder_.close();
  auto first = queue_->submit(job(0, {{1}}));
  decoder_.wait_for_batches(1);
  auto rest = queue_->submit(job(0, {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}));
  decoder_.open();
  ASSERT_TRUE(rest->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.batches(), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 2}, {0, 2}, {0, 1}}));
}

TEST_F(BatchingQueueTest, RefusesSentencesBeyondTheQueueLimit) {
  BatchingOptions options;
  options.max_queue_sentences = 2;
  start(options);
  decoder_.close();
  auto first = queue_->submit(job(0, {{1}}));
  decoder_.wait_for_batches(1);  // taken out of the queue: the queue is empty again
  auto two = queue_->submit(job(0, {{1}, {2}}));
  EXPECT_THROW(queue_->submit(job(0, {{3}})), QueueFull);
  EXPECT_EQ(queue_->queued_sentences(), 2u);
}

TEST_F(BatchingQueueTest, WaitsForRequestsOnTheirWayButNeverForNone) {
  BatchingOptions options;
  options.batch_wait = kForever;
  start(options);
  // Alone: answered at once, although a batch may wait an hour for company.
  auto alone = queue_->submit(job(0, {{1}}));
  ASSERT_TRUE(alone->wait_until(Clock::now() + kForever));
  // With a request on its way, the queued sentence waits for it and both share a batch.
  std::shared_ptr<PendingJob> early, late;
  {
    BatchingQueue::Arrival arriving(*queue_);
    early = queue_->submit(job(0, {{2}}));
    late = queue_->submit(job(0, {{3}}));
  }
  ASSERT_TRUE(early->wait_until(Clock::now() + kForever));
  ASSERT_TRUE(late->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.batches(), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 2}}));
}

TEST_F(BatchingQueueTest, AfterABatchOfSeveralRequestsTheNextWaitsForAsMany) {
  BatchingOptions options;
  options.batch_wait = kForever;
  start(options);
  decoder_.close();
  auto first = queue_->submit(job(0, {{1}}));
  decoder_.wait_for_batches(1);
  std::vector<std::shared_ptr<PendingJob>> three;
  for (int r = 0; r < 3; ++r) three.push_back(queue_->submit(job(0, {{2}})));
  decoder_.open();
  for (auto& pending : three) ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
  // Three clients were answered together: the first to come back waits for the other two.
  std::vector<std::shared_ptr<PendingJob>> again;
  for (int r = 0; r < 3; ++r) again.push_back(queue_->submit(job(0, {{3}})));
  for (auto& pending : again) ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.batches(), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 3}, {0, 3}}));
}

// The request's own Arrival ends as it is queued: a lone request is decoded at once, even while
// its handler has not yet let go of the Arrival (the batch would otherwise wait for it).
TEST_F(BatchingQueueTest, SubmittingEndsTheRequestsOwnArrival) {
  BatchingOptions options;
  options.batch_wait = std::chrono::hours(1);
  start(options);
  BatchingQueue::Arrival arrival(*queue_);
  auto pending = queue_->submit(job(0, {{1}}), &arrival);
  EXPECT_TRUE(pending->wait_until(Clock::now() + std::chrono::seconds(60)));
}

TEST_F(BatchingQueueTest, ARequestPastItsDeadlineIsNotDecoded) {
  start();
  decoder_.close();
  auto first = queue_->submit(job(0, {{1}}));
  decoder_.wait_for_batches(1);
  auto expired = queue_->submit(job(0, {{2}, {3}}));
  EXPECT_FALSE(expired->wait_until(Clock::now()));
  auto next = queue_->submit(job(0, {{4}}));
  decoder_.open();
  ASSERT_TRUE(next->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.batches(), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 1}}));
}

TEST_F(BatchingQueueTest, ADecodingErrorReachesItsRequests) {
  start();
  decoder_.fail();
  auto pending = queue_->submit(job(0, {{1}, {2}}));
  ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
  ASSERT_TRUE(pending->error());
  EXPECT_THROW(std::rethrow_exception(pending->error()), std::runtime_error);
}

TEST_F(BatchingQueueTest, FinishDecodesWhatIsQueuedThenRefusesMore) {
  queue_ = std::make_unique<BatchingQueue>(
      [this](size_t lane, std::vector<std::vector<int64_t>> sources, const std::vector<bool>&) {
        return decoder_.decode(lane, std::move(sources));
      },
      BatchingOptions{});
  auto a = queue_->submit(job(0, {{1}}));
  auto b = queue_->submit(job(1, {{2}}));
  queue_->finish();
  EXPECT_THROW(queue_->submit(job(0, {{3}})), QueueFull);
  queue_->run();  // returns once both are decoded
  EXPECT_TRUE(a->wait_until(Clock::now()));
  EXPECT_TRUE(b->wait_until(Clock::now()));
}

}  // namespace
}  // namespace tfm
