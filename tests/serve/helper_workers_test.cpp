// The main decoding thread and its helpers: who takes which batch, and the cores the main thread
// is given while helpers decode (BatchingQueue::run_helper, share_cores; WorkerCores).
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "serve/batching_queue.h"
#include "serve/worker_cores.h"
#include "tests/serve/queue_test_support.h"

namespace tfm {
namespace {

using testing::Clock;
using testing::job;
using testing::kForever;

/// Echoes each batch and records the thread that decoded it, by the batch's first source id; a
/// batch whose first id is held waits until released.
class ThreadRecordingDecoder {
 public:
  std::vector<SentenceResult> decode(std::vector<std::vector<int64_t>> sources) {
    const int64_t id = sources.front().front();
    std::unique_lock<std::mutex> lock(mutex_);
    threads_[id] = std::this_thread::get_id();
    changed_.notify_all();
    changed_.wait(lock, [&] { return held_.count(id) == 0; });
    std::vector<SentenceResult> results(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) results[i].translation.source_ids = std::move(sources[i]);
    return results;
  }
  void hold(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.insert(id);
  }
  void release(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.erase(id);
    changed_.notify_all();
  }
  /// Waits until the batch starting with `id` reaches the decoder; the thread decoding it.
  std::thread::id wait_for(int64_t id) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return threads_.count(id) > 0; });
    return threads_[id];
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<int64_t> held_;
  std::map<int64_t, std::thread::id> threads_;
};

/// A queue decoded by a main thread (run()) and one helper (run_helper()); the main thread's
/// share_cores calls are recorded.
class HelperWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_ = std::make_unique<BatchingQueue>(
        [this](size_t, std::vector<std::vector<int64_t>> sources, const std::vector<bool>&) {
          return decoder_.decode(std::move(sources));
        },
        BatchingOptions{});
    queue_->share_cores([this](size_t busy_helpers) {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_helpers_seen_.push_back(busy_helpers);
    });
    main_ = std::thread([this] { queue_->run(); });
    helper_ = std::thread([this] { queue_->run_helper(); });
  }
  void TearDown() override {
    queue_->finish();
    main_.join();
    helper_.join();
  }
  std::vector<size_t> busy_helpers_seen() {
    std::lock_guard<std::mutex> lock(mutex_);
    return busy_helpers_seen_;
  }
  ThreadRecordingDecoder decoder_;
  std::unique_ptr<BatchingQueue> queue_;
  std::thread main_, helper_;
  std::mutex mutex_;
  std::vector<size_t> busy_helpers_seen_;
};

TEST_F(HelperWorkersTest, ALoneClientsRequestsAllGoToTheMainThread) {
  // Each request is sent the moment the previous one is answered, as a lone client does: the
  // main thread must be free by then, or the helper (on fewer cores) would take the next.
  std::set<std::thread::id> threads;
  for (int64_t r = 0; r < 50; ++r) {
    auto pending = queue_->submit(job(0, {{r}}));
    ASSERT_TRUE(pending->wait_until(Clock::now() + kForever));
    threads.insert(decoder_.wait_for(r));
  }
  EXPECT_EQ(threads, std::set<std::thread::id>{main_.get_id()});
  for (size_t busy : busy_helpers_seen()) EXPECT_EQ(busy, 0u);
}

TEST_F(HelperWorkersTest, TheHelperTakesWhatArrivesWhileTheMainThreadDecodes) {
  decoder_.hold(1);
  auto first = queue_->submit(job(0, {{1}}));
  EXPECT_EQ(decoder_.wait_for(1), main_.get_id());
  decoder_.hold(2);
  auto second = queue_->submit(job(0, {{2}}));
  EXPECT_EQ(decoder_.wait_for(2), helper_.get_id());
  // The main thread's next batch starts while the helper decodes: it is told so.
  decoder_.release(1);
  ASSERT_TRUE(first->wait_until(Clock::now() + kForever));
  auto third = queue_->submit(job(0, {{3}}));
  ASSERT_TRUE(third->wait_until(Clock::now() + kForever));
  EXPECT_EQ(decoder_.wait_for(3), main_.get_id());
  EXPECT_EQ(busy_helpers_seen(), (std::vector<size_t>{0, 1}));
  decoder_.release(2);
  ASSERT_TRUE(second->wait_until(Clock::now() + kForever));
  EXPECT_EQ(second->results()[0].translation.source_ids, (std::vector<int64_t>{2}));
}

TEST(WorkerCores, TheMainThreadTakesTheCoresOfIdleSingleThreadHelpers) {
  const WorkerCores two(2, 2);
  EXPECT_EQ(two.helper_threads(), 1);
  EXPECT_EQ(two.main_threads(0), 2);
  EXPECT_EQ(two.main_threads(1), 1);
  const WorkerCores four(4, 4);
  EXPECT_EQ(four.main_threads(0), 4);
  EXPECT_EQ(four.main_threads(2), 2);
  EXPECT_EQ(four.main_threads(3), 1);
  EXPECT_EQ(WorkerCores(2, 3).main_threads(2), 1);  // more workers than cores
  EXPECT_EQ(WorkerCores(2, 1).main_threads_alone(), 2);
}

TEST(WorkerCores, HelpersWithTeamsOfTheirOwnLeaveTheMainThreadItsShare) {
  // A main team as large as every core beside the helpers' teams would be more threads than cores.
  const WorkerCores cores(8, 2);
  EXPECT_EQ(cores.helper_threads(), 4);
  EXPECT_EQ(cores.main_threads(0), 4);
  EXPECT_EQ(cores.main_threads(1), 4);
}

}  // namespace
}  // namespace tfm
