// The optimiser's large-batch options on every back end (docs/nn.md "Optimizer options"): the warm-up schedule at
// its start, middle, end and after, linear scaling, LARS's local rate per layer on a hand-computed example (with and
// without momentum), the back ends' sum of squares, and the refusal of bad values. Inputs are small integers and
// powers of two, so most expectations are exact in float.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/nn/sgd.hpp"
#include "tests/core/nn_test_support.hpp"

namespace dsgd::nn::test {
namespace {

class NnSgd : public BackendTest {
 protected:
  NnSgd() { threads_ = 1; }
};

SgdOptions warmup(float base, float scaled, std::int64_t iterations) {
  SgdOptions options;
  options.learning_rate = base;
  options.scaled_learning_rate = scaled;
  options.warmup_iterations = iterations;
  return options;
}

TEST(NnSgdSchedule, WarmupRampsLinearlyFromTheBaseToTheScaledRate) {
  const SgdOptions options = warmup(0.25f, 2.25f, 8);
  EXPECT_EQ(scheduled_rate(options, 0), 0.25f);  // the base rate exactly
  EXPECT_EQ(scheduled_rate(options, 2), 0.75f);  // 0.25 + 2 x 2/8
  EXPECT_EQ(scheduled_rate(options, 4), 1.25f);  // half way
  EXPECT_EQ(scheduled_rate(options, 7), 2.0f);
  EXPECT_EQ(scheduled_rate(options, 8), 2.25f);  // the scaled rate from the end of the warm-up on
  EXPECT_EQ(scheduled_rate(options, 1000), 2.25f);
  // No warm-up: the scaled rate from step 0; no scaled rate: the base rate throughout.
  EXPECT_EQ(scheduled_rate(warmup(0.25f, 2.25f, 0), 0), 2.25f);
  EXPECT_EQ(scheduled_rate(warmup(0.25f, 0.0f, 8), 3), 0.25f);
  EXPECT_EQ(scheduled_rate(warmup(0.25f, 0.0f, 0), 99), 0.25f);
  // Any function of the step replaces it.
  SgdOptions custom = options;
  custom.schedule = [](std::int64_t step) { return 1.0f / static_cast<float>(step + 1); };
  EXPECT_EQ(scheduled_rate(custom, 0), 1.0f);
  EXPECT_EQ(scheduled_rate(custom, 3), 0.25f);
}

TEST(NnSgdSchedule, LinearScalingMultipliesByGlobalOverReferenceBatch) {
  EXPECT_EQ(linearly_scaled_rate(0.01f, 64, 64), 0.01f);
  EXPECT_EQ(linearly_scaled_rate(0.01f, 4096, 64), static_cast<float>(0.01 * 64));
  EXPECT_EQ(linearly_scaled_rate(0.5f, 32, 64), 0.25f);
  EXPECT_EQ(linearly_scaled_rate(0.125f, 1024, 256), 0.5f);
  EXPECT_THROW(linearly_scaled_rate(0.1f, 0, 64), InputError);
  EXPECT_THROW(linearly_scaled_rate(0.1f, 64, 0), InputError);
  EXPECT_EQ(parse_lr_scaling("linear"), LrScaling::kLinear);
  EXPECT_EQ(lr_scaling_name(LrScaling::kNone), "none");
  try {
    parse_lr_scaling("sqrt");
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& error) {
    EXPECT_NE(std::string(error.what()).find("none, linear"), std::string::npos) << error.what();
  }
}

TEST(NnSgdLars, LocalRateIsTheFormulaWithGuardsForZeroNorms) {
  // trust |w| / (|g| + lambda |w|)
  EXPECT_DOUBLE_EQ(lars_local_rate(5, 10, 0.625f, 0.5f), 0.625 * 5 / (10 + 0.5 * 5));
  EXPECT_DOUBLE_EQ(lars_local_rate(5, 10, 0.001f, 0.0f), static_cast<double>(0.001f) * 5 / 10);
  EXPECT_EQ(lars_local_rate(0, 10, 0.001f, 0.5f), 1.0);  // zero weights: the global rate
  EXPECT_EQ(lars_local_rate(5, 0, 0.001f, 0.5f), 1.0);   // zero gradient: the global rate
  EXPECT_EQ(lars_local_rate(0, 0, 0.001f, 0.0f), 1.0);
}

TEST_P(NnSgd, WarmupStepsFollowTheScheduleByTheirOwnCount) {
  DeviceBuffer w(backend(), std::vector<float>{0}), g(backend(), std::vector<float>{1});
  Sgd sgd(backend(), 1, warmup(0.25f, 1.0f, 3));
  const std::vector<float> rates = {0.25f, 0.5f, 0.75f, 1.0f, 1.0f};
  const std::vector<float> weights = {-0.25f, -0.75f, -1.5f, -2.5f, -3.5f};
  for (std::size_t t = 0; t < rates.size(); ++t) {
    EXPECT_EQ(sgd.steps(), static_cast<std::int64_t>(t));
    EXPECT_EQ(sgd.learning_rate(), rates[t]) << "step " << t;
    sgd.step(w.get(), g.get());
    EXPECT_EQ(w.download(), std::vector<float>{weights[t]}) << "step " << t;
  }
  EXPECT_TRUE(sgd.local_rates().empty());  // no LARS
}

TEST_P(NnSgd, LarsScalesEachLayerByItsTrustRatio) {
  // Four layers and an empty one (a ReLU's slice), trust 0.625, weight decay 0.5, global rate 0.5:
  //   a  w (3, 4)     |w| 5   g (6, 8)   |g| 10  ->  0.625 x 5 / (10 + 2.5) = 0.25
  //   b  w (0, 0)     |w| 0   g (1, -1)          ->  1 (zero weights)
  //   c  w (1, 2, 2)  |w| 3   g 0                ->  1 (zero gradient)
  //   d  w (4)        |w| 4   g (3)      |g| 3   ->  0.625 x 4 / (3 + 2) = 0.5
  SgdOptions options;
  options.learning_rate = 0.5f;
  options.weight_decay = 0.5f;
  options.lars = true;
  options.lars_trust = 0.625f;
  options.layout = {{"a", 0, 2}, {"relu", 2, 0}, {"b", 2, 2}, {"c", 4, 3}, {"d", 7, 1}};
  DeviceBuffer w(backend(), std::vector<float>{3, 4, 0, 0, 1, 2, 2, 4});
  DeviceBuffer g(backend(), std::vector<float>{6, 8, 1, -1, 0, 0, 0, 3});
  Sgd sgd(backend(), 8, options);
  EXPECT_EQ(sgd.local_rates(), (std::vector<double>{1, 1, 1, 1, 1}));  // before the first step
  sgd.step(w.get(), g.get());
  EXPECT_EQ(sgd.local_rates(), (std::vector<double>{0.25, 1, 1, 1, 0.5}));
  // w - 0.5 lambda_l (g + 0.5 w):  a: (3, 4) - 0.125 (7.5, 10);  b: -0.5 (1, -1);  c: (1, 2, 2) - 0.5 (0.5, 1, 1);
  // d: 4 - 0.25 x 5.
  EXPECT_EQ(w.download(), (std::vector<float>{2.0625f, 2.75f, -0.5f, 0.5f, 0.75f, 1.5f, 1.5f, 2.75f}));
}

TEST_P(NnSgd, LarsWithMomentumAccumulatesTheLocallyScaledStep) {
  // You et al. 2017, Algorithm 1: v <- mu v + eta lambda_l (g + beta w); w <- w - v (here with v's sign flipped).
  SgdOptions options;
  options.learning_rate = 0.5f;
  options.momentum = 0.5f;
  options.weight_decay = 0.5f;
  options.lars = true;
  options.lars_trust = 0.625f;  // one layer: the whole buffer
  DeviceBuffer w(backend(), std::vector<float>{3, 4});
  DeviceBuffer g(backend(), std::vector<float>{6, 8});
  Sgd sgd(backend(), 2, options);
  sgd.step(w.get(), g.get());  // lambda 0.25: v = -0.125 (7.5, 10); w = (2.0625, 2.75), |w| = 3.4375
  EXPECT_EQ(w.download(), (std::vector<float>{2.0625f, 2.75f}));
  g.upload(std::vector<float>{6, 8});
  sgd.step(w.get(), g.get());
  const double lambda = 0.625 * 3.4375 / (10 + 0.5 * 3.4375);
  EXPECT_NEAR(sgd.local_rates().at(0), lambda, 1e-7);
  const double rate = 0.5 * lambda;
  const std::vector<double> v = {0.5 * -0.9375 - rate * (6 + 0.5 * 2.0625), 0.5 * -1.25 - rate * (8 + 0.5 * 2.75)};
  const auto after = w.download();
  EXPECT_NEAR(after[0], 2.0625 + v[0], 1e-6);
  EXPECT_NEAR(after[1], 2.75 + v[1], 1e-6);
}

TEST_P(NnSgd, SumOfSquaresIsExactOnSmallIntegers) {
  std::vector<float> values(100000);
  double expected = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    expected += values[i] * values[i];
  }
  DeviceBuffer x(backend(), values);
  EXPECT_EQ(backend().sum_of_squares(x.get(), values.size()), expected);
  EXPECT_EQ(backend().sum_of_squares(x.get(), 3), 9.0 + 4.0 + 1.0);
  EXPECT_EQ(backend().sum_of_squares(x.get(), 0), 0.0);
}

TEST_P(NnSgd, BadOptionsAreRefused) {
  const auto refused = [this](const SgdOptions& options, std::size_t count = 4) {
    EXPECT_THROW(Sgd(backend(), count, options), InputError);
  };
  SgdOptions options;
  options.warmup_iterations = -1;
  refused(options);
  options = {};
  options.scaled_learning_rate = -0.1f;
  refused(options);
  options = {};
  options.lars = true;
  options.lars_trust = 0;
  refused(options);
  options.lars_trust = -0.001f;
  refused(options);
  options = {};
  options.lars = true;
  options.layout = {{"a", 0, 2}, {"b", 3, 1}};  // a gap
  refused(options);
  options.layout = {{"a", 0, 2}, {"b", 2, 1}};  // 3 of 4 parameters
  refused(options);
  options.layout = {{"a", 0, 2}, {"b", 2, 2}};
  EXPECT_NO_THROW(Sgd(backend(), 4, options));
  // A schedule's rate is checked when it is used.
  options = {};
  options.schedule = [](std::int64_t step) { return step == 0 ? 0.5f : 0.0f; };
  DeviceBuffer w(backend(), std::vector<float>{1}), g(backend(), std::vector<float>{1});
  Sgd sgd(backend(), 1, options);
  sgd.step(w.get(), g.get());
  EXPECT_THROW(sgd.step(w.get(), g.get()), InputError);
}

INSTANTIATE_TEST_SUITE_P(Backends, NnSgd, ::testing::ValuesIn(backend_names()), backend_test_name);

}  // namespace
}  // namespace dsgd::nn::test
