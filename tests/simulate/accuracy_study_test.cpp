// simulate/accuracy_study.hpp: one chip split into groups, numeric runs to a target, the model fitted on the small
// group counts and its predictions flagged as extrapolated beyond them; bad options refused.

#include "simulate/accuracy_study.hpp"

#include <gtest/gtest.h>

#include "app/run_common.hpp"
#include "platforms/catalog.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::simulate {
namespace {

class AccuracyStudyTest : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    testing::write_synthetic_idx_folder(dir_, 960, 200);
    cli_.dataset = "idx:" + dir_.string();
    data_ = app::load_run_data(cli_);
    options_.run.algorithm = "sync-sgd";
    options_.run.hyper.batch = 16;
    options_.run.budget.target_accuracy = 0.6;
    options_.run.budget.iterations = 200;
    options_.run.budget.eval_every = 2;
    options_.groups = {1, 2, 4, 8};
    options_.fit_up_to = 4;
    options_.published_seconds = {{1, 100}, {4, 50}};
  }
  app::RunCli cli_;
  algorithms::RunData data_;
  AccuracyStudyOptions options_;
};

TEST_F(AccuracyStudyTest, FitsOnTheSmallGroupCountsAndFlagsTheLargerAsExtrapolated) {
  const auto study = run_accuracy_study(platforms::load_platform("cori-knl"), options_, data_);
  ASSERT_EQ(study.points.size(), 4U);
  ASSERT_TRUE(study.model.has_value());
  EXPECT_EQ(study.model->points, 3U);
  for (const auto& point : study.points) {
    SCOPED_TRACE(point.groups);
    ASSERT_TRUE(point.reached);
    EXPECT_DOUBLE_EQ(point.cores_per_group, 68.0 / point.groups);
    EXPECT_GT(point.iterations_to_target, 0);
    EXPECT_DOUBLE_EQ(point.seconds_to_target, point.iterations_to_target * point.seconds_per_iteration);
    EXPECT_EQ(point.in_fit, point.groups <= 4);
    ASSERT_TRUE(point.predicted.has_value());
    EXPECT_EQ(point.predicted->extrapolated, point.groups > 4);
    // The model's seconds are its iterations at a size-only simulation's pace, which the numeric run's is close to
    // (its rounds add the runner's small exchanges).
    EXPECT_DOUBLE_EQ(point.predicted_seconds, point.predicted->updates * point.size_only_seconds_per_iteration);
    EXPECT_NEAR(point.size_only_seconds_per_iteration / point.seconds_per_iteration, 1.0, 0.05);
    EXPECT_EQ(point.published_seconds.has_value(), point.groups == 1 || point.groups == 4);
  }
  // Groups of fewer cores: each iteration of the chip takes longer.
  EXPECT_GT(study.points.back().seconds_per_iteration, study.points.front().seconds_per_iteration);
}

TEST_F(AccuracyStudyTest, BadOptionsAreRefused) {
  const auto platform = platforms::load_platform("cori-knl");
  auto options = options_;
  options.groups = {1, 69};
  EXPECT_THROW(run_accuracy_study(platform, options, data_), InputError);
  options = options_;
  options.run.budget.target_accuracy = 0;
  EXPECT_THROW(run_accuracy_study(platform, options, data_), InputError);
  options = options_;
  options.run.budget.iterations = 0;
  EXPECT_THROW(run_accuracy_study(platform, options, data_), InputError);
}

}  // namespace
}  // namespace dsgd::simulate
