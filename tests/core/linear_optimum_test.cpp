#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/data/sparse_presets.hpp"
#include "core/error.hpp"
#include "core/linear/logistic.hpp"
#include "core/linear/optimum.hpp"

namespace dsgd::linear {
namespace {

// 600 rows over 40 features, 3-12 non-zeros per row, labels from a hidden linear model with 10% of them flipped:
// learnable but not separable, so the optimum is finite and has a non-trivial loss.
data::SparseDataset small_problem(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  data::SparseDataset data;
  data.name = "small";
  data.features = 40;
  std::vector<double> hidden(data.features);
  for (double& h : hidden) h = normal(rng);
  for (int row = 0; row < 600; ++row) {
    const std::size_t count = 3 + rng() % 10;
    std::vector<std::uint32_t> chosen;
    while (chosen.size() < count) {
      const auto f = static_cast<std::uint32_t>(rng() % data.features);
      if (std::find(chosen.begin(), chosen.end(), f) == chosen.end()) chosen.push_back(f);
    }
    std::sort(chosen.begin(), chosen.end());
    double score = 0;
    for (const std::uint32_t f : chosen) {
      const double value = normal(rng);
      data.index.push_back(f);
      data.value.push_back(static_cast<float>(value));
      score += hidden[f] * value;
    }
    data.row_begin.push_back(data.index.size());
    const bool flip = uniform(rng) < 0.1;
    data.label.push_back((score >= 0) != flip ? 1.0f : -1.0f);
  }
  return data;
}

// grad F(w) = (1/n) sum_i slope(y_i w.x_i) y_i x_i + lambda w, in double.
std::vector<double> gradient(const Problem& p, const std::vector<float>& w) {
  const data::SparseDataset& data = *p.data;
  std::vector<double> g(data.features, 0.0);
  const double n = static_cast<double>(data.rows());
  for (std::size_t row = 0; row < data.rows(); ++row) {
    const auto indices = data.row_index(row);
    const auto values = data.row_value(row);
    double dot = 0;
    for (std::size_t k = 0; k < indices.size(); ++k) dot += double{values[k]} * w[indices[k]];
    const double y = data.label[row];
    const double scale = logistic_slope(y * dot) * y / n;
    for (std::size_t k = 0; k < indices.size(); ++k) g[indices[k]] += scale * values[k];
  }
  for (std::size_t f = 0; f < data.features; ++f) g[f] += p.lambda * w[f];
  return g;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (const double x : v) m = std::max(m, std::abs(x));
  return m;
}

TEST(CoreLinearOptimum, GradientVanishesAtTheOptimum) {
  const data::SparseDataset data = small_problem(7);
  const Problem p = problem(data);
  const Optimum best = optimum(p);
  ASSERT_EQ(best.w.size(), data.features);
  const double at_zero = max_abs(gradient(p, std::vector<float>(data.features, 0.0f)));
  const double at_best = max_abs(gradient(p, best.w));
  // liblinear stops at a relative gradient norm of ~eps; float rounding of w* adds ~1e-7 |w*| x curvature.
  EXPECT_LT(at_best, 1e-5 * at_zero) << "max |grad F| at w*: " << at_best << ", at 0: " << at_zero;
  EXPECT_TRUE(best.converged);
  EXPECT_GT(best.iterations, 0);
  EXPECT_DOUBLE_EQ(best.C, 1.0);  // lambda = 1/n
  EXPECT_EQ(best.eps, 1e-6);
  EXPECT_NE(best.solver.find("L2R_LR"), std::string::npos) << best.solver;
}

TEST(CoreLinearOptimum, ObjectiveIsMinimalAndMatchesLiblinearsScale) {
  const data::SparseDataset data = small_problem(11);
  const Problem p = problem(data);
  const Optimum best = optimum(p);
  EXPECT_DOUBLE_EQ(best.objective, objective(p, best.w));
  EXPECT_LT(best.objective, objective(p, std::vector<float>(data.features, 0.0f)));  // F(0) = log 2
  EXPECT_GT(best.objective, 0.1);  // label noise keeps the optimum away from 0
  // f = F / lambda (the header's correspondence), up to w*'s rounding to float.
  EXPECT_NEAR(best.liblinear_objective * p.lambda, best.objective, 1e-7 * best.objective);
  // Every nearby point is worse.
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> moved = best.w;
    for (float& x : moved) x += normal(rng);
    EXPECT_GT(objective(p, moved), best.objective) << "trial " << trial;
  }
  EXPECT_DOUBLE_EQ(closeness_percent(objective(p, best.w), best.objective), 100.0);
}

TEST(CoreLinearOptimum, SignFollowsTheLabels) {
  data::SparseDataset data = small_problem(5);
  const Optimum best = optimum(problem(data));
  // Flipped labels (and a -1 first row either way) must give the mirrored model, not the same one.
  for (float& y : data.label) y = -y;
  const Optimum flipped = optimum(problem(data));
  ASSERT_EQ(flipped.w.size(), best.w.size());
  for (std::size_t f = 0; f < best.w.size(); ++f) EXPECT_NEAR(flipped.w[f], -best.w[f], 1e-4f) << "feature " << f;
  EXPECT_NEAR(flipped.objective, best.objective, 1e-9);
}

TEST(CoreLinearOptimum, LambdaChangesC) {
  const data::SparseDataset data = small_problem(2);
  const Optimum weak = optimum(problem(data, 0.1 / static_cast<double>(data.rows())));
  EXPECT_DOUBLE_EQ(weak.C, 10.0);
  EXPECT_THROW(optimum(problem(data), -1.0), InputError);
}

// The generated presets' labels come from a hidden linear model plus noise: the optimum must beat F(0) = log 2 by a
// wide margin (learnable) and still misclassify some rows (not separable). The two quick presets stand for all.
TEST(CoreLinearOptimum, PresetLabelsAreLearnableButNotSeparable) {
  for (const char* name : {"w8a-like", "covtype-like"}) {
    const data::SparseDataset data =
        data::generate_preset(data::find_sparse_preset(name), data::PresetSize::kReduced, 1);
    const Optimum best = optimum(problem(data));
    std::size_t correct = 0;
    for (std::size_t row = 0; row < data.rows(); ++row) correct += dot_row(data, row, best.w) * data.label[row] > 0;
    const double accuracy = static_cast<double>(correct) / static_cast<double>(data.rows());
    EXPECT_GT(best.objective, 0.1) << name;
    EXPECT_LT(best.objective, 0.5) << name << ": F(0) = log 2 = 0.693";
    EXPECT_GT(accuracy, 0.8) << name;
    EXPECT_LT(accuracy, 0.99) << name;
  }
}

}  // namespace
}  // namespace dsgd::linear
