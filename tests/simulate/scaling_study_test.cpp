// Published scaling results predicted in simulation: the 1-D fit, the noise fit on a small simulated world, the
// comm ratio's definition, and that the output names what was fitted. The studies come from the catalog
// (algorithms/studies.hpp), so no algorithm is named here.

#include "simulate/scaling_study.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "platforms/catalog.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

using algorithms::ScalingStudy;

// The catalog study measuring `measure` (each of the four measures has one).
ScalingStudy catalog_study(algorithms::StudyMeasure measure) {
  for (const auto& study : algorithms::scaling_study_catalog()) {
    if (study.measure == measure) return study;
  }
  throw InternalError("no catalog study of that measure");
}

TEST(ScalingStudy, Minimise1dRecoversAKnownSpreadFromSyntheticEfficiencies) {
  // A straggler model: the slowest of N nodes is about sqrt(2 ln N) spreads slower than the mean.
  auto efficiencies = [](double spread) {
    std::vector<double> values;
    for (const int nodes : {2, 4, 8, 16, 32, 64}) values.push_back(1 / (1 + spread * std::sqrt(2 * std::log(nodes))));
    return values;
  };
  const double known = 0.0437;
  const auto published = efficiencies(known);
  int evaluations = 0;
  const double fitted = minimise_1d(
      [&](double spread) {
        ++evaluations;
        double sum = 0;
        const auto values = efficiencies(spread);
        for (std::size_t i = 0; i < values.size(); ++i) sum += std::pow(100 * (values[i] - published[i]), 2);
        return sum;
      },
      0.0, 0.3, 1e-4, 7);
  EXPECT_NEAR(fitted, known, 1e-4) << "expectation " << known << ", fitted " << fitted;
  EXPECT_LT(evaluations, 40);
}

TEST(ScalingStudy, Minimise1dStaysInItsRange) {
  EXPECT_NEAR(minimise_1d([](double x) { return x; }, 0.0, 1.0, 1e-3), 0.0, 1e-3);
  EXPECT_NEAR(minimise_1d([](double x) { return -x; }, 0.0, 1.0, 1e-3), 1.0, 1e-3);
}

// The weak-scaling study shrunk to 1, 2 and 4 KNL nodes and its first case (the one the noise is fitted on).
ScalingStudy small_weak_scaling_study() {
  ScalingStudy study = catalog_study(algorithms::StudyMeasure::kEfficiency);
  study.points.resize(3);
  study.cases.resize(1);
  study.cases[0].published_seconds.resize(3);
  study.cases[0].published_values.resize(3);
  study.noise_fit_case = 0;
  return study;
}

TEST(ScalingStudy, NoiseFitRecoversTheSpreadThatMadeTheEfficiencies) {
  ScalingStudy study = small_weak_scaling_study();
  const auto platform = platforms::catalog_platform(study.platform);
  ScalingStudyOptions options;
  options.iterations = 10;
  // Efficiencies made by the simulator itself at a known spread become the "published" column.
  const double known = 0.08;
  options.noise_spread = known;
  const auto made = run_scaling_study(platform, study, options);
  ASSERT_EQ(made.rows.size(), 3U);
  EXPECT_LT(made.rows[2].predicted, 0.99) << "a spread of 0.08 slows the slowest of 4 nodes";
  for (std::size_t i = 0; i < 3; ++i) study.cases[0].published_values[i] = made.rows[i].predicted;

  options.noise_spread.reset();
  const auto fitted = run_scaling_study(platform, study, options);
  ASSERT_EQ(fitted.fitted.size(), 2U);  // the conv efficiency, then the noise
  EXPECT_EQ(fitted.fitted[1].key, "noise_spread");
  // Not exact: while searching, the compute fit is the noise-free one; with the known spread it was redone noisy.
  EXPECT_NEAR(fitted.fitted[1].value, known, 0.01) << "expectation " << known << ", fitted " << fitted.fitted[1].value;
  // The compute fit hits the published time per iteration of the first size.
  const auto& first = fitted.rows.front();
  ASSERT_TRUE(first.predicted_seconds && first.published_seconds);
  EXPECT_NEAR(*first.predicted_seconds, *first.published_seconds, 0.01 * *first.published_seconds);
  EXPECT_EQ(first.time_by, Determined::kFitted);
  EXPECT_EQ(first.value_by, Determined::kByConstruction) << "the first size's efficiency is 1 by definition";
  for (std::size_t i = 1; i < fitted.rows.size(); ++i) {
    EXPECT_EQ(fitted.rows[i].value_by, Determined::kFitted) << "the noise case's values were fitted on";
    EXPECT_EQ(fitted.rows[i].time_by, Determined::kFitted) << "the fitted first time over fitted efficiencies";
  }

  const std::string text = format_study(fitted);
  EXPECT_NE(text.find("FITTED conv efficiency, " + study.cases[0].label), std::string::npos) << text;
  EXPECT_NE(text.find("FITTED noise spread"), std::string::npos) << text;
  EXPECT_NE(text.find("prediction sweep: 3 simulations"), std::string::npos) << text;
}

TEST(ScalingStudy, OneFittedValueIsNamedAndTheOtherCasesArePredicted) {
  const ScalingStudy study = catalog_study(algorithms::StudyMeasure::kCommRatio);
  ASSERT_EQ(study.compute_fit, algorithms::ComputeFit::kOneCase);
  const auto outcome = run_scaling_study(platforms::catalog_platform(study.platform), study, {});
  ASSERT_EQ(outcome.fitted.size(), 1U);
  EXPECT_EQ(outcome.fitted[0].key, "conv_efficiency");
  EXPECT_GT(outcome.fitted[0].value, 0.0);
  EXPECT_LE(outcome.fitted[0].value, 1.0);
  ASSERT_EQ(outcome.rows.size(), study.cases.size() * study.points.size());
  for (std::size_t k = 0; k < outcome.rows.size(); ++k) {
    const auto& row = outcome.rows[k];
    const bool target = k == study.compute_fit_case;
    EXPECT_EQ(row.time_by, target ? Determined::kFitted : Determined::kPredicted) << row.case_label;
    // The fit pins the target's time, the denominator of its comm ratio; the others' are predicted.
    EXPECT_EQ(row.value_by, target ? Determined::kFitted : Determined::kPredicted) << row.case_label;
    // The study's comm ratio is core/breakdown.hpp's: the communication categories' busy shares, wait left out.
    double communication = 0;
    for (std::size_t c = 0; c < kCategoryNames.size(); ++c) {
      if (is_communication(static_cast<Category>(c))) communication += row.shares.seconds[c];
    }
    EXPECT_NEAR(row.predicted, communication, 1e-12) << row.case_label;
    EXPECT_EQ(row.shares[Category::kWait], 0.0) << row.case_label;
    EXPECT_NEAR(row.shares.total(), 1.0, 1e-12) << row.case_label;
    EXPECT_GT(row.predicted, 0.0) << row.case_label;
    EXPECT_LT(row.predicted, 1.0) << row.case_label;
    ASSERT_TRUE(difference(study, row)) << row.case_label;
    EXPECT_NEAR(*difference(study, row), 100 * (row.predicted - *row.published), 1e-9);
  }
  const std::string text = format_study(outcome);
  EXPECT_NE(text.find("FITTED conv efficiency"), std::string::npos) << text;
  EXPECT_NE(text.find("largest comm ratio difference among predicted rows"), std::string::npos) << text;
}

TEST(ScalingStudy, AStudyWithoutFitsSaysSo) {
  const ScalingStudy study = catalog_study(algorithms::StudyMeasure::kSpeedup);
  ScalingStudyOptions options;
  options.iterations = 3;
  const auto outcome = run_scaling_study(platforms::catalog_platform(study.platform), study, options);
  EXPECT_TRUE(outcome.fitted.empty());
  EXPECT_EQ(outcome.rows.front().predicted, 1.0);
  EXPECT_EQ(outcome.rows.front().value_by, Determined::kByConstruction) << "one group's speed-up over itself";
  for (std::size_t i = 1; i < outcome.rows.size(); ++i) EXPECT_EQ(outcome.rows[i].value_by, Determined::kPredicted);
  // Published speed-ups come from the published times to accuracy.
  ASSERT_TRUE(outcome.rows.back().published);
  const auto& seconds = study.cases.front().published_seconds;
  EXPECT_DOUBLE_EQ(*outcome.rows.back().published, seconds.front() / seconds.back());
  EXPECT_NE(format_study(outcome).find("nothing fitted"), std::string::npos);
}

// The largest differences are those of predicted values: a fitted or by-construction row with a larger one is
// labelled in the table and left out of them.
TEST(ScalingStudy, LargestDifferencesCountPredictedRowsOnly) {
  StudyOutcome outcome;
  outcome.study = catalog_study(algorithms::StudyMeasure::kEfficiency);
  outcome.study.notes.clear();
  auto row = [](const std::string& size, double predicted, Determined value_by, double seconds, Determined time_by) {
    StudyRow r;
    r.case_label = "Net";
    r.size = size;
    r.predicted = predicted;
    r.published = 0.5;
    r.value_by = value_by;
    r.predicted_seconds = seconds;
    r.published_seconds = 100;
    r.time_by = time_by;
    return r;
  };
  outcome.rows = {row("1 node", 1.0, Determined::kByConstruction, 300, Determined::kFitted),
                  row("2 nodes", 0.9, Determined::kFitted, 250, Determined::kFitted),
                  row("4 nodes", 0.6, Determined::kPredicted, 110, Determined::kPredicted),
                  row("8 nodes", 0.45, Determined::kPredicted, 120, Determined::kPredicted)};
  const std::string text = format_study(outcome);
  EXPECT_NE(text.find("100.0% BY CONSTRUCTION"), std::string::npos) << text;
  EXPECT_NE(text.find("90.0% FITTED"), std::string::npos) << text;
  EXPECT_NE(text.find("300 FITTED"), std::string::npos) << text;
  EXPECT_NE(text.find("largest efficiency difference among predicted rows: Net at 4 nodes, +10.00 pp"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("largest time difference among predicted rows: Net at 8 nodes, +20.0%"), std::string::npos)
      << text;
  EXPECT_EQ(to_string(Determined::kByConstruction), "by construction");
}

TEST(ScalingStudy, APublishedTimeFasterThanPeakIsAnInputError) {
  ScalingStudy study = catalog_study(algorithms::StudyMeasure::kCommRatio);
  auto& target = study.cases.at(study.compute_fit_case);
  target.published_seconds = {1e-9};
  const std::string message =
      testing::input_error([&] { run_scaling_study(platforms::catalog_platform(study.platform), study, {}); });
  EXPECT_NE(message.find(target.label + "'s published"), std::string::npos) << message;
  EXPECT_NE(message.find("faster than"), std::string::npos) << message;
}

// Where the workers' processor prices kernels by shape, "conv" is its kernel model's one efficiency, and the fit
// bisects for it (the time is max(compute, memory) + fixed per kernel, not linear in 1 / e).
TEST(ScalingStudy, AKernelModelsEfficiencyIsFittedByBisection) {
  platforms::Platform platform = platforms::catalog_platform("p100-roce-25g");
  platforms::KernelModel model;
  model.parallel_units = 56;
  model.tile_m = 128;
  model.tile_n = 64;
  model.fixed_s = 1e-3;
  model.efficiency = 0.9;
  platform.nodes.devices.at(0).kernels = model;
  const platforms::KernelEfficiency classes = platform.nodes.devices[0].efficiency;
  EXPECT_DOUBLE_EQ(kernel_efficiency(platform, "conv"), 0.9);
  // A synthetic time: 1 ms fixed plus 2 ms at full efficiency, compute-bound below e = 0.5 only.
  const auto seconds_at = [](const platforms::Platform& probe) {
    const double e = kernel_efficiency(probe, "conv");
    return 1e-3 + std::max(2e-3 / e, 4e-3);
  };
  const double fitted = solve_kernel_efficiency(platform, "conv", 9e-3, seconds_at, "test");
  EXPECT_NEAR(fitted, 0.25, 0.25 * 1e-5);
  set_kernel_efficiency(platform, "conv", fitted, "fitted on a test");
  EXPECT_EQ(platform.nodes.devices[0].kernels->efficiency, fitted);
  EXPECT_EQ(platform.nodes.devices[0].kernels->sources.at("efficiency"), "fitted on a test");
  EXPECT_EQ(platform.nodes.devices[0].efficiency.by_class, classes.by_class) << "the classes are not touched";
  EXPECT_NE(testing::input_error([&] {
              solve_kernel_efficiency(platform, "conv", 4e-3, seconds_at, "test");
            }).find("no kernel efficiency in (0, 1] fits it"),
            std::string::npos);
}

TEST(ScalingStudy, CatalogStudiesHaveTheirPublishedValuesInOrder) {
  for (const auto& study : algorithms::scaling_study_catalog()) {
    ASSERT_FALSE(study.points.empty()) << study.name;
    for (const auto& c : study.cases) {
      // A paper may stop before the last point (nv-caffe runs inside one server): the first values, none missing.
      EXPECT_LE(c.published_values.size(), study.points.size()) << study.name << " / " << c.label;
      EXPECT_TRUE(c.point_batches.empty() || c.point_batches.size() == study.points.size())
          << study.name << " / " << c.label;
      EXPECT_TRUE(c.published_seconds.empty() || c.published_seconds.size() == study.points.size())
          << study.name << " / " << c.label;
      EXPECT_NO_THROW(algorithms::find_algorithm(c.algorithm)) << study.name << " / " << c.label;
    }
    if (study.noise_fit_case) {
      EXPECT_LT(*study.noise_fit_case, study.cases.size()) << study.name;
    }
    EXPECT_LT(study.compute_fit_case, study.cases.size()) << study.name;
  }
  EXPECT_NE(testing::input_error([] { algorithms::find_scaling_study("table5"); }).find("table4"), std::string::npos);
}

// A throughput study (seed 001 Table III) shrunk to 1, 2 and 4 GPUs and its first case: the first FPS is the
// compute fit's target (fitted, within 1%), the others are predicted as the global batch over the simulated time,
// with the batch the case gives each point; the difference is in percent of the published FPS.
TEST(ScalingStudy, ImagesPerSecondFitTheFirstPointAndPredictTheRestWithEachPointsBatch) {
  ScalingStudy study = catalog_study(algorithms::StudyMeasure::kImagesPerSecond);
  study.compute_fit = algorithms::ComputeFit::kEachCase;  // the catalog's takes the K80's efficiency instead
  study.points.resize(3);
  study.cases.resize(1);
  auto& c = study.cases[0];
  c.published_values.resize(3);
  ASSERT_EQ(c.point_batches.size(), 7U) << "Table III changes the batch between 1 and 2 GPUs";
  c.point_batches.resize(3);
  const auto platform = platforms::catalog_platform(study.platform);
  ScalingStudyOptions options;
  options.iterations = 3;
  const auto outcome = run_scaling_study(platform, study, options);
  ASSERT_EQ(outcome.rows.size(), 3U);
  ASSERT_EQ(outcome.fitted.size(), 1U);
  EXPECT_EQ(outcome.fitted[0].key, "conv_efficiency");
  const auto& first = outcome.rows[0];
  EXPECT_NEAR(first.predicted, c.published_values[0], 0.01 * c.published_values[0]);
  EXPECT_EQ(first.value_by, Determined::kFitted) << "a rate at the fit's target is that fit";
  for (std::size_t i = 0; i < 3; ++i) {
    const double global_batch = c.point_batches[i];  // split among the workers
    EXPECT_NEAR(outcome.rows[i].predicted, global_batch / outcome.rows[i].seconds_per_iteration,
                1e-9 * outcome.rows[i].predicted);
    EXPECT_NEAR(*difference(study, outcome.rows[i]), 100 * (outcome.rows[i].predicted / c.published_values[i] - 1),
                1e-9);
    if (i > 0) {
      EXPECT_EQ(outcome.rows[i].value_by, Determined::kPredicted);
    }
  }
  EXPECT_EQ(difference_unit(study.measure), "percent");
  const std::string text = format_study(outcome);
  EXPECT_NE(text.find("FITTED conv efficiency, " + c.label), std::string::npos) << text;
  EXPECT_NE(text.find("images/s at 1 GPU (batch 512)"), std::string::npos) << text;
}

// seed 001's tables take the K80's one FITTED efficiency from its device study, which fitted it on Table IV's
// Expresso at 1 GPU: that row is labelled fitted, and every other row of both tables predicted.
TEST(ScalingStudy, ThePlatformsFittedEfficiencyLabelsItsTargetRowFitted) {
  for (const std::string name : {"dmath-table3", "dmath-table4"}) {
    ScalingStudy study = algorithms::find_scaling_study(name);
    EXPECT_EQ(study.compute_fit, algorithms::ComputeFit::kNone) << name << ": one efficiency per GPU model";
    study.points.resize(2);
    study.cases.resize(1);
    study.cases[0].published_values.resize(2);
    if (!study.cases[0].point_batches.empty()) study.cases[0].point_batches.resize(2);
    ScalingStudyOptions options;
    options.iterations = 3;
    const auto outcome = run_scaling_study(platforms::catalog_platform(study.platform), study, options);
    ASSERT_EQ(outcome.rows.size(), 2U);
    const bool fitted_here = study.platform_fit_case == 0U;
    EXPECT_EQ(outcome.rows[0].value_by, fitted_here ? Determined::kFitted : Determined::kPredicted) << name;
    EXPECT_EQ(outcome.rows[1].value_by, Determined::kPredicted) << name;
    ASSERT_EQ(outcome.fitted.size(), 1U) << name << ": the efficiency it predicts with is printed as FITTED";
    EXPECT_EQ(outcome.fitted[0].key, "kernel_efficiency");
    EXPECT_NE(outcome.fitted[0].fitted_on.find("--study k80"), std::string::npos) << outcome.fitted[0].fitted_on;
  }
}

}  // namespace
}  // namespace dsgd::simulate
