#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/linear/logistic.hpp"

namespace dsgd::linear {
namespace {

// Three rows, three features, small values whose margins are easy to check by hand (see the test below).
data::SparseDataset three_rows() {
  data::SparseDataset data;
  data.name = "three-rows";
  data.features = 3;
  data.row_begin = {0, 2, 3, 5};
  data.index = {0, 2, 1, 0, 1};
  data.value = {1.0f, 2.0f, 1.0f, 0.5f, -1.0f};
  data.label = {1.0f, -1.0f, 1.0f};
  return data;
}

TEST(CoreLinearLogistic, LossIsStableAtLargeMargins) {
  EXPECT_DOUBLE_EQ(logistic_loss(0.0), std::log(2.0));
  // A well-classified row costs ~e^-1000 (underflows to 0); a badly misclassified one costs the margin itself.
  EXPECT_EQ(logistic_loss(1000.0), 0.0);
  EXPECT_DOUBLE_EQ(logistic_loss(-1000.0), 1000.0);
  EXPECT_TRUE(std::isfinite(logistic_loss(-1e300)));
  // Both branches agree with the textbook form where that form is exact enough.
  for (const double margin : {-30.0, -2.5, -0.1, 0.1, 2.5, 30.0}) {
    EXPECT_NEAR(logistic_loss(margin), std::log(1.0 + std::exp(-margin)), 1e-12) << "margin " << margin;
  }
}

TEST(CoreLinearLogistic, SlopeIsTheLossDerivative) {
  EXPECT_DOUBLE_EQ(logistic_slope(0.0), -0.5);
  EXPECT_EQ(logistic_slope(1000.0), 0.0);
  EXPECT_DOUBLE_EQ(logistic_slope(-1000.0), -1.0);
  for (const double margin : {-20.0, -3.0, -0.5, 0.0, 0.5, 3.0, 20.0}) {
    const double h = 1e-6;
    const double numeric = (logistic_loss(margin + h) - logistic_loss(margin - h)) / (2 * h);
    EXPECT_NEAR(logistic_slope(margin), numeric, 1e-8) << "margin " << margin;
    EXPECT_NEAR(logistic_slope(margin), -1.0 / (1.0 + std::exp(margin)), 1e-15) << "margin " << margin;
  }
}

TEST(CoreLinearLogistic, DotRowUsesTheRowsNonZeros) {
  const data::SparseDataset data = three_rows();
  const std::vector<float> w = {0.5f, -1.0f, 0.25f};
  EXPECT_EQ(dot_row(data, 0, w), 1.0f);   // 1 x 0.5 + 2 x 0.25
  EXPECT_EQ(dot_row(data, 1, w), -1.0f);  // 1 x -1
  EXPECT_EQ(dot_row(data, 2, w), 1.25f);  // 0.5 x 0.5 + -1 x -1
}

TEST(CoreLinearLogistic, ObjectiveMatchesAHandComputation) {
  const data::SparseDataset data = three_rows();
  const Problem p = problem(data);
  EXPECT_DOUBLE_EQ(p.lambda, 1.0 / 3.0);
  const std::vector<float> w = {0.5f, -1.0f, 0.25f};
  // Margins y w.x: +1 x 1, -1 x -1, +1 x 1.25; |w|^2 = 0.25 + 1 + 0.0625.
  const double expected =
      (2 * std::log(1 + std::exp(-1.0)) + std::log(1 + std::exp(-1.25))) / 3 + 0.5 * (1.0 / 3.0) * 1.3125;
  EXPECT_NEAR(objective(p, w), expected, 1e-15);
  // At w = 0 every row costs log 2 and there is no penalty.
  EXPECT_DOUBLE_EQ(objective(p, std::vector<float>(3, 0.0f)), std::log(2.0));
  // An explicit lambda replaces 1/n; padding after the first `features` entries is ignored.
  const std::vector<float> padded = {0.5f, -1.0f, 0.25f, 7.0f};
  EXPECT_NEAR(objective(problem(data, 0.1), padded), expected - 0.5 * (1.0 / 3.0 - 0.1) * 1.3125, 1e-15);
}

TEST(CoreLinearLogistic, ClosenessIsSeed003sFormula) {
  EXPECT_DOUBLE_EQ(closeness_percent(0.3, 0.3), 100.0);
  EXPECT_NEAR(closeness_percent(1.005, 1.0), 99.5, 1e-12);  // within 0.5% of the optimum
  EXPECT_NEAR(closeness_percent(0.45, 0.3), 50.0, 1e-12);
  EXPECT_NEAR(closeness_percent(0.6, 0.3), 0.0, 1e-12);
  EXPECT_NEAR(closeness_percent(-0.6, 0.3), 0.0, 1e-12);  // magnitudes, as the seed writes it
}

}  // namespace
}  // namespace dsgd::linear
