// Published scaling results predicted in simulation: the 1-D fit, the noise fit on a small simulated world, the
// comm ratio's definition, and that the output names what was fitted. The studies come from the catalog
// (algorithms/studies.hpp), so no algorithm is named here.

#include "simulate/scaling_study.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/algorithm.hpp"
#include "platforms/catalog.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

using algorithms::ScalingStudy;

// The catalog study measuring `measure` (each of the three measures has one).
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
  EXPECT_TRUE(first.time_fitted);
  EXPECT_TRUE(first.value_fitted) << "the noise case's values were fitted on";

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
    EXPECT_FALSE(row.value_fitted) << row.case_label << ": no comm ratio is fitted";
    EXPECT_EQ(row.time_fitted, k == study.compute_fit_case) << row.case_label;
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
  // Published speed-ups come from the published times to accuracy.
  ASSERT_TRUE(outcome.rows.back().published);
  const auto& seconds = study.cases.front().published_seconds;
  EXPECT_DOUBLE_EQ(*outcome.rows.back().published, seconds.front() / seconds.back());
  EXPECT_NE(format_study(outcome).find("nothing fitted"), std::string::npos);
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

TEST(ScalingStudy, CommRatioCountsABusyWorkerAndTheMastersUpdate) {
  Breakdown master;
  master.add(Category::kCpuUpdate, 1);
  master.add(Category::kWait, 50);
  Breakdown worker;
  worker.add(Category::kCpuGpuPara, 2);
  worker.add(Category::kCpuGpuData, 1);
  worker.add(Category::kForwardBackward, 6);
  worker.add(Category::kWait, 100);  // idle: left out
  Breakdown shares;
  // (2 + 1) communication of 2 + 1 + 6 busy + 1 of the master's update.
  EXPECT_DOUBLE_EQ(comm_ratio({master, worker}, true, &shares), 3.0 / 10.0);
  EXPECT_DOUBLE_EQ(shares[Category::kCpuUpdate], 0.1);
  EXPECT_DOUBLE_EQ(shares[Category::kWait], 0.0);
  // Without a master, rank 0 is the worker.
  EXPECT_DOUBLE_EQ(comm_ratio({worker}, false), 3.0 / 9.0);
}

TEST(ScalingStudy, CatalogStudiesHavePublishedValuesForEveryPoint) {
  for (const auto& study : algorithms::scaling_study_catalog()) {
    ASSERT_FALSE(study.points.empty()) << study.name;
    for (const auto& c : study.cases) {
      EXPECT_TRUE(c.published_values.empty() || c.published_values.size() == study.points.size())
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

}  // namespace
}  // namespace dsgd::simulate
