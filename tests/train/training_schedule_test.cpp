#include "train/training_schedule.h"

#include <gtest/gtest.h>

namespace tfm {
namespace {

TrainingProgress at(int64_t update, int64_t epoch = 1, int64_t batch_in_epoch = 0) {
  TrainingProgress progress;
  progress.update = update;
  progress.epoch = epoch;
  progress.batch_in_epoch = batch_in_epoch;
  return progress;
}

TEST(TrainingSchedule, WithoutValidateEveryEverySaveValidates) {
  TrainOptions options;
  options.save_interval_updates = 200;
  const TrainingSchedule schedule(options);
  EXPECT_FALSE(schedule.after_update(199).save);
  const auto save = schedule.after_update(400);
  EXPECT_TRUE(save.save);
  EXPECT_TRUE(save.validate);
  EXPECT_TRUE(schedule.at_epoch_end(7).validate);
  options.save_interval_updates = 0;  // epoch ends only
  EXPECT_FALSE(TrainingSchedule(options).after_update(400).save);
}

TEST(TrainingSchedule, ValidateEveryKeepsItsOwnIntervalApartFromSaves) {
  TrainOptions options;
  options.save_interval_updates = 200;
  options.validate_every = 500;
  const TrainingSchedule schedule(options);
  const auto save_only = schedule.after_update(200);
  EXPECT_TRUE(save_only.save);
  EXPECT_FALSE(save_only.validate);
  const auto validate = schedule.after_update(500);  // not a save interval: still saved, to keep the best
  EXPECT_TRUE(validate.save);
  EXPECT_TRUE(validate.validate);
  EXPECT_TRUE(schedule.after_update(1000).validate);
  EXPECT_FALSE(schedule.at_epoch_end(258).validate);  // an epoch end off the interval only saves
  EXPECT_TRUE(schedule.at_epoch_end(1500).validate);
}

TEST(TrainingSchedule, TheStopValidatesTheLastCheckpointUnlessThatWasDone) {
  const TrainingSchedule schedule{TrainOptions()};
  EXPECT_FALSE(schedule.at_stop(40, 40, 40).save);     // saved and validated at this update
  EXPECT_TRUE(schedule.at_stop(40, 40, 20).validate);  // saved (an epoch end), not validated
  EXPECT_TRUE(schedule.at_stop(41, 40, 40).save);
}

TEST(TrainingSchedule, StopsAtTheFirstLimitReachedAndAnInterruptionFirst) {
  TrainOptions options;
  options.max_updates = 100;
  options.max_epochs = 3;
  options.time_limit_minutes = 1;
  options.patience = 2;
  const TrainingSchedule schedule(options);
  EXPECT_FALSE(schedule.stop_reason(at(99, 3), 59, false));
  EXPECT_EQ(schedule.stop_reason(at(100), 0, false), StopReason::kMaxUpdates);
  EXPECT_EQ(schedule.stop_reason(at(5, 4), 0, false), StopReason::kMaxEpochs);
  EXPECT_EQ(schedule.stop_reason(at(5), 60, false), StopReason::kTimeLimit);
  auto patient = at(5);
  patient.validations_without_improvement = 2;
  EXPECT_EQ(schedule.stop_reason(patient, 0, false), StopReason::kPatience);
  EXPECT_EQ(schedule.stop_reason(at(100), 60, true), StopReason::kInterrupted);
  EXPECT_FALSE(TrainingSchedule(TrainOptions()).stop_reason(at(1000000, 500), 1e9, false));  // no limits
}

TEST(TrainingSchedule, BudgetIsTheLargestShareOfAnyLimit) {
  TrainOptions options;
  options.max_updates = 1000;
  options.time_limit_minutes = 10;
  options.max_epochs = 4;
  const TrainingSchedule schedule(options);
  EXPECT_DOUBLE_EQ(schedule.budget_used(at(250), 60, 100), 0.25);            // updates
  EXPECT_DOUBLE_EQ(schedule.budget_used(at(250), 300, 100), 0.5);            // time
  EXPECT_DOUBLE_EQ(schedule.budget_used(at(250, 3, 50), 60, 100), 2.5 / 4);  // epochs
  EXPECT_DOUBLE_EQ(schedule.budget_used(at(2000), 0, 100), 1.0);             // never past the end
  EXPECT_DOUBLE_EQ(TrainingSchedule(TrainOptions()).budget_used(at(7), 9, 10), 0.0);
}

TEST(TrainingSchedule, LogLinesByUpdatesOffATerminalAndBySecondsOnIt) {
  TrainOptions options;
  options.log_interval = 50;
  const TrainingSchedule schedule(options);
  EXPECT_TRUE(schedule.log_due(100, 0.01, false));
  EXPECT_FALSE(schedule.log_due(101, 100, false));
  EXPECT_TRUE(schedule.log_due(101, 1.0, true));
  EXPECT_FALSE(schedule.log_due(100, 0.5, true));
}

TEST(TrainingSchedule, MinutesLeftByUpdatesElseByTheTimeLimit) {
  TrainOptions options;
  options.max_updates = 400;
  EXPECT_DOUBLE_EQ(*TrainingSchedule(options).minutes_left(100, 600), 30.0);  // 10 min per 100 updates
  options.max_updates = 0;
  options.time_limit_minutes = 60;
  EXPECT_DOUBLE_EQ(*TrainingSchedule(options).minutes_left(100, 600), 50.0);
  EXPECT_FALSE(TrainingSchedule(TrainOptions()).minutes_left(100, 600));
}

}  // namespace
}  // namespace tfm
