// The communication-scheme study: its compute calibration makes the 1-GPU iteration take batch / published
// throughput, efficiencies are ratios to that baseline, and bad sizes are refused. A small study on a catalog GPU
// cluster keeps it fast; the schemes come from the catalog's study, so no algorithm is named here.

#include "simulate/scheme_study.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "platforms/catalog.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

algorithms::SchemeStudy small_study() {
  algorithms::SchemeStudy study = algorithms::find_scheme_study("schemes");
  study.platforms = {"m40-cluster"};
  study.calibration_platform = "m40-cluster";
  // ResNet-50 at a rate an M40 reaches below peak (3 x 8.2 GFLOP x 100 img/s = 2.5 TFLOP/s of its 6.8).
  study.models = {{"resnet50", 32, 100, "Tesla M40", "a test rate"}};
  study.workers = {1, 4, 16};
  return study;
}

TEST(SchemeStudy, OneGpuTakesTheBatchOverThePublishedThroughputAndEfficienciesAreRatiosToIt) {
  SchemeStudyOptions options;
  options.iterations = 2;
  const auto study = small_study();
  const auto outcome = run_scheme_study(study, options);
  ASSERT_EQ(outcome.calibrations.size(), 1U);
  EXPECT_GT(outcome.calibrations[0].conv_efficiency, 0);
  EXPECT_LE(outcome.calibrations[0].conv_efficiency, 1);
  ASSERT_EQ(outcome.rows.size(), study.schemes.size() * study.workers.size());
  const auto& baseline = outcome.rows.front();
  EXPECT_EQ(baseline.workers, 1);
  // Expectation: 32 images / 100 images/s = 0.32 s per iteration, exact up to rounding.
  EXPECT_NEAR(baseline.seconds_per_iteration, 0.32, 1e-9) << "expectation 0.32 s";
  EXPECT_EQ(baseline.efficiency_by, Determined::kByConstruction);
  for (const auto& row : outcome.rows) {
    EXPECT_NEAR(row.efficiency, baseline.seconds_per_iteration / row.seconds_per_iteration, 1e-12) << row.scheme;
    if (row.workers > 1) {
      EXPECT_EQ(row.efficiency_by, Determined::kPredicted);
      EXPECT_LT(row.efficiency, 1.0) << row.scheme << " at " << row.workers << " GPUs communicates";
      EXPECT_GT(row.communication_s, 0) << row.scheme << " at " << row.workers;
    }
    // A lower bound: no simulated point is faster than it.
    EXPECT_GT(row.bound.seconds(), 0) << row.scheme;
    EXPECT_GE(row.seconds_per_iteration, row.bound.seconds() * (1 - 1e-9)) << row.scheme << " at " << row.workers;
    EXPECT_EQ(row.beyond_bound.empty(), row.seconds_per_iteration <= 2 * row.bound.seconds()) << row.scheme;
  }
  const std::string text = format_scheme_study(outcome);
  EXPECT_NE(text.find("by construction"), std::string::npos) << text;
  EXPECT_NE(text.find("a test rate"), std::string::npos) << "the calibration names its source";
  EXPECT_NE(text.find("Lower bound"), std::string::npos) << text;
}

TEST(SchemeStudy, RefusesSizesWithoutTheOneGpuBaselineAndImpossibleRates) {
  auto study = small_study();
  SchemeStudyOptions options;
  options.workers = {4, 16};
  EXPECT_NE(testing::input_error([&] { run_scheme_study(study, options); }).find("must start at 1"), std::string::npos);
  options.workers = {};
  study.models[0].images_per_second = 1e6;  // far beyond an M40 even at an effective 2.25 x peak
  EXPECT_NE(testing::input_error([&] { run_scheme_study(study, options); }).find("resnet50's published"),
            std::string::npos);
}

TEST(SchemeStudy, FoldingFlowsAtAFatpipeKeepsEverySchemesAnswer) {
  // SimulationOptions::fold_fatpipe_flows against the full simulation (every flow that meets another at a node's
  // root complex simulated), at the flow level on 32 GPUs of p100-roce-25g (8 nodes): the same seconds per
  // iteration, within the 0.5% (flows that meet only at a FATPIPE link do not contend, so exactly).
  const auto& study = algorithms::find_scheme_study("schemes");
  const auto platform = platforms::catalog_platform("p100-roce-25g");
  const auto& model = study.models.front();
  for (const auto& scheme : study.schemes) {
    ScalingOptions options = scheme_scaling_options(platform, model, scheme, 32);
    options.iterations = 2;
    options.fidelity = Fidelity::kFlow;
    const double fold_s = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
    options.fold_fatpipe_flows = false;
    const double full_s = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
    std::printf("%-16s %s, 32 GPUs: fold %.9g s/iteration, full (expected) %.9g\n", scheme.label.c_str(),
                model.model.c_str(), fold_s, full_s);
    EXPECT_NEAR(fold_s, full_s, 0.005 * full_s) << scheme.label;
  }
}

}  // namespace
}  // namespace dsgd::simulate
