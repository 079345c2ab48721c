// simulate/accuracy_entries.hpp: a small groups-of-a-chip study (accuracy_study_test.cpp's) as its results entries:
// one point per number of groups with the study's numbers and the speedups computed from them, then the two FITTED
// parameters of the model.

#include "simulate/accuracy_entries.hpp"

#include <gtest/gtest.h>

#include "app/run_common.hpp"
#include "platforms/catalog.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::simulate {
namespace {

class AccuracyEntriesTest : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    testing::write_synthetic_idx_folder(dir_, 960, 200);
    cli_.dataset = "idx:" + dir_.string();
    data_ = app::load_run_data(cli_);
    options_.run.algorithm = "sync-sgd";
    options_.run.model = "lenet";
    options_.run.hyper.batch = 16;
    options_.run.hyper.seed = 7;
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

TEST_F(AccuracyEntriesTest, OnePointPerGroupCountThenTheFittedParameters) {
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
    EXPECT_EQ(entry.model, "lenet");
    EXPECT_EQ(entry.dataset, cli_.dataset);
    EXPECT_EQ(entry.seed, 7U);
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
