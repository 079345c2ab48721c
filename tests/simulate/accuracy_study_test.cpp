// simulate/accuracy_study.hpp: one chip split into groups, numeric runs to a target, the model fitted on the small
// group counts and its predictions flagged as extrapolated beyond them; bad options refused; and the study's results
// entries (simulate/accuracy_entries.hpp).

#include "simulate/accuracy_study.hpp"

#include <gtest/gtest.h>

#include "app/run_common.hpp"
#include "platforms/catalog.hpp"
#include "simulate/accuracy_entries.hpp"
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

// The study as its results entries: one point per number of groups with the speedups computed from its numbers,
// then the two FITTED parameters of the model.
TEST_F(AccuracyStudyTest, OnePointPerGroupCountThenTheFittedParameters) {
  const auto study = run_accuracy_study(platforms::load_platform("cori-knl"), options_, data_);
  ASSERT_EQ(study.points.size(), 4U);
  ASSERT_TRUE(study.model.has_value());
  const auto entries = to_entries(study, options_, cli_.dataset);
  ASSERT_EQ(entries.size(), 6U);
  const auto& one = study.points.front();
  ASSERT_TRUE(one.reached);
  for (std::size_t i = 0; i < study.points.size(); ++i) {
    const auto& point = study.points[i];
    const auto& entry = entries[i];
    SCOPED_TRACE(point.groups);
    ASSERT_TRUE(point.reached);
    ASSERT_TRUE(point.predicted.has_value());
    EXPECT_EQ(entry.name, "accuracy/" + std::to_string(point.groups) + "groups");
    EXPECT_EQ(entry.executor, "simgrid");
    EXPECT_EQ(entry.fidelity, "message");
    EXPECT_EQ(entry.platform, "cori-knl");
    EXPECT_EQ(entry.algorithm, "sync-sgd");
    EXPECT_EQ(entry.model, options_.run.model);
    EXPECT_EQ(entry.dataset, cli_.dataset);
    EXPECT_EQ(entry.seed, options_.run.hyper.seed);
    EXPECT_EQ(entry.ranks, point.groups);
    EXPECT_EQ(entry.real_time, point.seconds_to_target);
    EXPECT_EQ(entry.labels.at("kind"), "point");
    EXPECT_EQ(entry.labels.at("reached"), "yes");
    EXPECT_EQ(entry.labels.at("model_by"),
              point.groups <= 4 ? "FITTED (in the fit)" : "predicted (model extrapolated)");
    EXPECT_EQ(entry.counters.at("global_batch"), 16.0 * point.groups);
    EXPECT_EQ(entry.counters.at("iterations_to_target"), point.iterations_to_target);
    EXPECT_EQ(entry.counters.at("speedup"), one.seconds_to_target / point.seconds_to_target);
    EXPECT_EQ(entry.counters.at("model_iterations"), point.predicted->updates);
    EXPECT_EQ(entry.counters.at("model_error_percent"),
              100 * (point.predicted->updates / point.iterations_to_target - 1));
    ASSERT_EQ(entry.curves.size(), 1U);
    EXPECT_EQ(entry.curves.front().points.size(), point.curve.size());
    EXPECT_EQ(entry.counters.count("published_seconds"), point.groups == 1 || point.groups == 4 ? 1U : 0U);
  }
  EXPECT_EQ(entries[2].counters.at("published_speedup"), 2);  // 100 s on one group, 50 s on four
  const auto& s_min = entries[4];
  EXPECT_EQ(s_min.name, "accuracy/fitted/S_min");
  EXPECT_EQ(s_min.labels.at("kind"), "fitted");
  EXPECT_EQ(s_min.labels.at("fitted_on"), "groups up to 4");
  EXPECT_EQ(s_min.counters.at("value"), study.model->s_min_updates);
  EXPECT_EQ(entries[5].name, "accuracy/fitted/B_noise");
  EXPECT_EQ(entries[5].counters.at("value"), study.model->b_noise_examples);
}

}  // namespace
}  // namespace dsgd::simulate
