// Data-parallel training across real processes: two `tfm train` ranks on 127.0.0.1 (Gloo, one
// thread each) against one process that accumulates the same batches.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "model/model_file.h"
#include "tests/dist/dist_test_support.h"
#include "tests/process_support.h"
#include "tests/test_support.h"

namespace tfm {
namespace {

/// The largest |a - b| over all parameters of two model files (same architecture), and where.
std::pair<double, std::string> max_parameter_difference(const std::string& a_path, const std::string& b_path) {
  const auto a = load_model_file(a_path, torch::kCPU);
  const auto b = load_model_file(b_path, torch::kCPU);
  auto b_parameters = b.model->named_parameters();
  std::pair<double, std::string> largest{0, ""};
  for (const auto& item : a.model->named_parameters()) {
    const double difference = (item.value() - b_parameters[item.key()]).abs().max().item<double>();
    if (difference > largest.first) largest = {difference, item.key()};
  }
  return largest;
}

/// A numbers corpus prepared once per test, and `tfm train` run as ranks or as one process.
class DataParallelRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string data = (dir_ / "data").string();
    ASSERT_EQ(std::system(("python3 " TFM_SOURCE_DIR "/scripts/make_numbers_corpus.py " + data +
                           " --train 200 --valid 10 --test 10 > /dev/null")
                              .c_str()),
              0);
    ASSERT_EQ(testing::run({TFM_BINARY, "prepare", "--train-src", data + "/train.en", "--train-tgt", data + "/train.de",
                            "--vocab-size", "120", "-o", prepared()},
                           log("prepare")),
              0)
        << testing::read_file(log("prepare"));
  }

  std::string prepared() const { return (dir_ / "prepared").string(); }
  std::string log(const std::string& name) const { return (dir_ / (name + ".log")).string(); }
  std::string checkpoint(const std::string& run) const { return (dir_ / run / "checkpoint_last.pt").string(); }

  /// `tfm train` for 10 updates, dropout off, a learning rate high enough that every update
  /// moves the parameters well beyond the tolerance, checkpoints every 5 updates. Adam's epsilon
  /// is raised from 1e-9 to 1e-4: two ranks sum a rank's batches first and the ranks' sums after,
  /// one process sums the batches in a row, and the two roundings differ. Where a gradient is tiny
  /// against the terms that sum to it (ReLU units that fire on one token, the attention keys'
  /// bias, which softmax ignores), that rounding noise is most of it, and Adam's m / sqrt(v)
  /// turns it into a full learning-rate step of either sign (at 1e-6: 2.6e-4 apart after 10
  /// updates with --update-freq 2, against 0 with 1, where a sum of two is exact either way).
  /// float32 throughout: on a CPU with native bf16, `--dtype auto` would train in bf16 autocast,
  /// whose rounding of the same sums in another order is far coarser (7.7e-3 apart).
  std::vector<std::string> train(const std::string& run, int update_freq, int max_updates = 10) const {
    return {TFM_BINARY,
            "--threads",
            "1",
            "train",
            "--train-src",
            prepared(),
            "--save-dir",
            (dir_ / run).string(),
            "--dtype",
            "float32",
            "--preset",
            "tiny",
            "--d-model",
            "32",
            "--d-ff",
            "64",
            "--dropout",
            "0",
            "--attention-dropout",
            "0",
            "--relu-dropout",
            "0",
            "--max-tokens",
            "128",
            "--update-freq",
            std::to_string(update_freq),
            "--lr-scheduler",
            "inverse_sqrt",
            "--lr",
            "0.01",
            "--warmup",
            "2",
            "--max-updates",
            std::to_string(max_updates),
            "--save-interval-updates",
            "5",
            "--adam-eps",
            "1e-4",
            "--keep-last",
            "0",
            "--average-last",
            "0",
            "--log-interval",
            "1"};
  }

  static std::vector<std::string> rank_environment(int port, int rank) {
    return {"MASTER_ADDR=127.0.0.1",        "MASTER_PORT=" + std::to_string(port), "WORLD_SIZE=2",
            "RANK=" + std::to_string(rank), "LOCAL_RANK=" + std::to_string(rank),  "LOCAL_WORLD_SIZE=2"};
  }

  /// Runs `args` as ranks 0 and 1 on 127.0.0.1 (logs NAME-rank0.log, NAME-rank1.log); both must
  /// succeed. Returns rank 0's log and rank 1's.
  std::pair<std::string, std::string> run_two_ranks(std::vector<std::string> args, const std::string& name) const {
    const int port = testing::free_port();
    args.insert(args.end(), {"--dist-timeout", "120"});
    const pid_t rank0 = testing::spawn(args, rank_environment(port, 0), log(name + "-rank0"));
    const pid_t rank1 = testing::spawn(args, rank_environment(port, 1), log(name + "-rank1"));
    const int code0 = testing::wait_for(rank0), code1 = testing::wait_for(rank1);
    std::pair<std::string, std::string> logs{testing::read_file(log(name + "-rank0")),
                                             testing::read_file(log(name + "-rank1"))};
    EXPECT_EQ(code0, 0) << logs.first;
    EXPECT_EQ(code1, 0) << logs.second;
    return logs;
  }

  testing::TempDir dir_;
};

class DataParallel : public DataParallelRuns, public ::testing::WithParamInterface<int> {};

TEST_P(DataParallel, TwoRanksTakeTheStepsOfOneProcessOnTheUnionOfTheirBatches) {
  const int per_rank = GetParam();
  const auto [rank0_log, rank1_log] = run_two_ranks(train("ranks", per_rank), "ranks");
  ASSERT_FALSE(HasFailure());
  EXPECT_NE(rank0_log.find("data parallel: 2 ranks (gloo)"), std::string::npos) << rank0_log;
  // Each rank compares its parameters with rank 0's at every checkpoint and fails if they differ.
  EXPECT_NE(rank0_log.find("ranks agree: parameters bit-identical on all 2 ranks at update 5"), std::string::npos);
  EXPECT_NE(rank0_log.find("ranks agree: parameters bit-identical on all 2 ranks at update 10"), std::string::npos);
  EXPECT_EQ(rank1_log.find("train |"), std::string::npos) << "rank 1 must leave the reporting to rank 0";

  ASSERT_EQ(testing::run(train("union", 2 * per_rank), log("union")), 0) << testing::read_file(log("union"));
  const auto [difference, where] = max_parameter_difference(checkpoint("ranks"), checkpoint("union"));
  std::cout << "largest difference from one process: " << difference << " (" << where << ")\n";
  EXPECT_LT(difference, 1e-5) << "two ranks x --update-freq " << per_rank << " against one process x " << 2 * per_rank
                              << ", at " << where;
  // The comparison can tell runs apart: one process on half the batches ends far away.
  ASSERT_EQ(testing::run(train("half", per_rank), log("half")), 0) << testing::read_file(log("half"));
  EXPECT_GT(max_parameter_difference(checkpoint("ranks"), checkpoint("half")).first, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(UpdateFreq, DataParallel, ::testing::Values(1, 2));

TEST_F(DataParallelRuns, RanksResumeTogetherFromRankZerosCheckpoint) {
  // Stopped after 5 updates and started again with the same command: both ranks load
  // checkpoint_last.pt (written by rank 0 alone), skip the batches already taken and end where an
  // uninterrupted single process on the union of their batches ends.
  run_two_ranks(train("ranks", 1, 5), "first");
  ASSERT_FALSE(HasFailure());
  const std::string rank0_log = run_two_ranks(train("ranks", 1, 10), "resumed").first;
  ASSERT_FALSE(HasFailure());
  EXPECT_NE(rank0_log.find("resuming from"), std::string::npos) << rank0_log;
  EXPECT_NE(rank0_log.find("update 5,"), std::string::npos) << rank0_log;
  EXPECT_NE(rank0_log.find("ranks agree: parameters bit-identical on all 2 ranks at update 10"), std::string::npos)
      << rank0_log;
  ASSERT_EQ(testing::run(train("union", 2), log("union")), 0) << testing::read_file(log("union"));
  const auto [difference, where] = max_parameter_difference(checkpoint("ranks"), checkpoint("union"));
  std::cout << "largest difference from one uninterrupted process: " << difference << " (" << where << ")\n";
  EXPECT_LT(difference, 1e-5) << "at " << where;
}

}  // namespace
}  // namespace tfm
