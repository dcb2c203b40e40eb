#include "train/progress_log.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace tfm {
namespace {

std::vector<nlohmann::json> records(const testing::TempDir& dir) {
  std::ifstream in(dir / "metrics.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

UpdateTotals update(double loss, int64_t target_tokens, double lr) {
  UpdateTotals totals;
  totals.loss = torch::tensor(loss, torch::kDouble);
  totals.nll = torch::tensor(loss / 2, torch::kDouble);
  totals.target_tokens = target_tokens;
  totals.all_tokens = 2 * target_tokens;
  totals.lr = lr;
  totals.allreduce_seconds = 0.5;
  return totals;
}

TEST(ProgressLog, ALineAveragesTheUpdatesSinceTheLastPerTargetToken) {
  testing::TempDir dir;
  ProgressLog log(dir.path().string(), "float32", 0, 100.0);
  EXPECT_TRUE(log.empty());
  log.add(update(30, 10, 1e-3));
  log.add(update(50, 30, 2e-3));
  EXPECT_DOUBLE_EQ(log.seconds_since_last_line(104.0), 4.0);
  TrainingProgress progress;
  progress.update = 2;
  log.write_line(progress, 9, 12.0, 5.0, false, 104.0);
  EXPECT_TRUE(log.empty());  // new sums after each line
  const auto lines = records(dir);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["type"], "train");
  EXPECT_EQ(lines[0]["update"], 2);
  EXPECT_DOUBLE_EQ(lines[0]["loss"].get<double>(), 80.0 / 40);
  EXPECT_DOUBLE_EQ(lines[0]["ppl"].get<double>(), std::exp(40.0 / 40));
  EXPECT_DOUBLE_EQ(lines[0]["tokens_per_s"].get<double>(), 80.0 / 4);
  EXPECT_DOUBLE_EQ(lines[0]["lr"].get<double>(), 2e-3);  // the last update's rate
  EXPECT_EQ(lines[0]["dtype"], "float32");
  EXPECT_FALSE(lines[0].contains("ranks"));
}

TEST(ProgressLog, DataParallelLinesAddRanksAndAllReduceTimeAndValidationsHaveTheirRecord) {
  testing::TempDir dir;
  ProgressLog log(dir.path().string(), "bfloat16", 2, 0.0);
  log.add(update(10, 5, 1e-3));
  log.add(update(10, 5, 1e-3));
  TrainingProgress progress;
  progress.update = 8;
  log.write_line(progress, 4, 1.0, std::nullopt, true, 1.0);
  ValidationResult result;
  result.loss = 2.5;
  result.ppl = 9.0;
  result.bleu = 31.5;
  log.write_validation(result, progress, 3, true, true, "bleu", 4, 2.0, 0.5);
  const auto lines = records(dir);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0]["ranks"], 2);
  EXPECT_DOUBLE_EQ(lines[0]["allreduce_ms_per_update"].get<double>(), 500.0);
  EXPECT_EQ(lines[1]["type"], "valid");
  EXPECT_EQ(lines[1]["epoch"], 3);
  EXPECT_EQ(lines[1]["epoch_end"], true);
  EXPECT_DOUBLE_EQ(lines[1]["bleu"].get<double>(), 31.5);
}

}  // namespace
}  // namespace tfm
