#include "dist/distributed_group.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include "dist/gradient_buckets.h"
#include "tests/dist/dist_test_support.h"
#include "tests/tensor_assert.h"

namespace tfm {
namespace {

using std::chrono::seconds;

// These run LibTorch's own Gloo (libtorch_cpu) through headers from Debian's libgloo-dev: the
// exchanges below are the proof that construction and collectives work with that pairing.
TEST(DistributedGroup, AllReduceSumsOverRanksAndBroadcastCopiesRankZeros) {
  const int port = testing::free_port();
  std::vector<torch::Tensor> summed(2), broadcast(2), counts(2);
  testing::run_ranks(2, [&](int rank) {
    DistributedGroup group(testing::local_env(port, 2, rank), "gloo", seconds(60));
    EXPECT_EQ(group.rank(), rank);
    EXPECT_EQ(group.size(), 2);
    // [100003]: more than one chunk of Gloo's ring, an odd length.
    std::vector<torch::Tensor> values{torch::arange(100003, torch::kFloat) * (rank + 1),
                                      torch::full({3}, rank + 1, torch::kLong)};
    group.all_reduce_sum(values);
    summed[rank] = values[0];
    counts[rank] = values[1];
    std::vector<torch::Tensor> mine{torch::full({5}, 10.0 * (rank + 1))};
    group.broadcast_from_main(mine);
    broadcast[rank] = mine[0];
    group.barrier();
  });
  const auto expected = torch::arange(100003, torch::kFloat) * 3;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(torch::equal(summed[rank], expected)) << rank;
    EXPECT_TRUE(torch::equal(counts[rank], torch::full({3}, 3, torch::kLong))) << rank;
    EXPECT_TRUE(torch::equal(broadcast[rank], torch::full({5}, 10.0))) << rank;
  }
}

TEST(GradientBuckets, SumGradientsOverRanksInAFewFlatBuffers) {
  const int port = testing::free_port();
  std::vector<std::vector<torch::Tensor>> results(2);
  testing::run_ranks(2, [&](int rank) {
    DistributedGroup group(testing::local_env(port, 2, rank), "gloo", seconds(60));
    torch::manual_seed(0);  // the same parameters on both ranks; gradients differ by rank
    std::vector<torch::Tensor> parameters{torch::randn({4, 3}).requires_grad_(), torch::randn({7}).requires_grad_(),
                                          torch::randn({2, 2}).requires_grad_()};
    parameters[0].mutable_grad() = torch::full({4, 3}, 1.0 + rank);
    parameters[1].mutable_grad() = torch::arange(7, torch::kFloat) * (rank + 1);
    if (rank == 0) parameters[2].mutable_grad() = torch::full({2, 2}, 5.0);  // rank 1 has none
    // The first listed again (tied embeddings): exchanged once, not summed twice.
    auto listed = parameters;
    listed.push_back(parameters[0]);
    GradientBuckets buckets(listed, /*bucket_bytes=*/64);  // 48 + 28 + 16 bytes: two buckets
    EXPECT_EQ(buckets.bucket_count(), 2u);
    EXPECT_EQ(buckets.elements(), 12 + 7 + 4);
    buckets.all_reduce(group);
    for (const auto& parameter : parameters) results[rank].push_back(parameter.grad().clone());
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TENSOR_NEAR(results[rank][0], torch::full({4, 3}, 3.0), 0);
    EXPECT_TENSOR_NEAR(results[rank][1], torch::arange(7, torch::kFloat) * 3, 0);
    EXPECT_TENSOR_NEAR(results[rank][2], torch::full({2, 2}, 5.0), 0);
  }
}

TEST(DistributedGroup, ARankThatNeverJoinsIsAnErrorWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  try {
    DistributedGroup alone(testing::local_env(testing::free_port(), 2, 0), "gloo", seconds(2));
    FAIL() << "joined a group of two alone";
  } catch (const DistributedError& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0: cannot join the 2-process group"), std::string::npos)
        << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(30));
}

TEST(DistributedGroup, ARankThatLeavesMakesTheOthersCollectiveFailNotHang) {
  const int port = testing::free_port();
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> left{false};
  testing::run_ranks(2, [&](int rank) {
    auto group = std::make_unique<DistributedGroup>(testing::local_env(port, 2, rank), "gloo", seconds(20));
    group->barrier();
    if (rank == 1) {  // leaves: its sockets close as the group is destroyed
      group.reset();
      left = true;
      return;
    }
    while (!left) std::this_thread::yield();  // until rank 1 has gone, however long that takes
    std::vector<torch::Tensor> values{torch::ones({10})};
    try {
      group->all_reduce_sum(values);
    } catch (const DistributedError& e) {
      error = e.what();
    }
  });
  EXPECT_NE(error.find("rank 0: all-reduce failed (another rank exited"), std::string::npos) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(60));
}

// What a rank's Gloo does when its peer is killed mid-send: a write to a socket whose other end has
// closed. Without SIGPIPE ignored the process dies of the signal here, silently.
TEST(DistributedGroup, AWriteToAPeerThatHasGoneFailsInsteadOfEndingTheProcess) {
  DistributedGroup alone(testing::local_env(testing::free_port(), 1, 0), "gloo", seconds(20));
  int ends[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
  ::close(ends[1]);
  const char byte = 0;
  errno = 0;
  EXPECT_EQ(::write(ends[0], &byte, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  ::close(ends[0]);
}

TEST(DistributedGroup, AnUnknownBackendIsAUsageError) {
  EXPECT_THROW(DistributedGroup(testing::local_env(testing::free_port(), 2, 0), "mpi", seconds(1)),
               std::invalid_argument);
  EXPECT_EQ(default_backend(torch::kCPU), "gloo");
  EXPECT_EQ(default_backend(torch::Device(torch::kCUDA, 1)), "nccl");
}

}  // namespace
}  // namespace tfm
