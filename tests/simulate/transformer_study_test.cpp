#include "simulate/transformer_study.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "platforms/catalog.hpp"

namespace dsgd::simulate {
namespace {

const algorithms::TransformerStudy& megatron() { return algorithms::transformer_study_catalog().front(); }

// Megatron-LM SC'21 Table 1 from one FITTED efficiency: the bounds issue 45 sets.
TEST(TransformerStudy, PredictsMegatronsTable1WithinItsBounds) {
  const auto outcome = run_transformer_study(megatron(), platforms::load_platform("selene"));
  ASSERT_EQ(outcome.points.size(), 10U);
  EXPECT_EQ(outcome.points.front().determined, Determined::kFitted);
  EXPECT_NEAR(outcome.points.front().difference_percent, 0, 0.01);
  EXPECT_LE(outcome.mean_abs_difference_percent, 4.0);
  EXPECT_LE(outcome.max_abs_difference_percent, 8.0);
  // The paper's trend: the 1008B row well above the 1.7B row (163 against 137).
  EXPECT_GE(outcome.points.back().prediction.tflops_per_gpu / outcome.points.front().prediction.tflops_per_gpu, 1.10);
}

// The catalog's selene carries the efficiency this study fits, so a plain `dsgd simulate` on it predicts the same.
TEST(TransformerStudy, TheCatalogHoldsTheFittedEfficiency) {
  const auto selene = platforms::load_platform("selene");
  const auto outcome = run_transformer_study(megatron(), selene);
  EXPECT_NEAR(selene.nodes.devices.front().kernels->efficiency / outcome.efficiency, 1, 0.005);
}

TEST(TransformerStudy, EntriesLabelWhatDeterminedEachRow) {
  const auto outcome = run_transformer_study(megatron(), platforms::load_platform("selene"));
  const auto entries = to_entries(outcome);
  ASSERT_EQ(entries.size(), 11U);
  EXPECT_EQ(entries.front().labels.at("determined"), "fitted");
  EXPECT_EQ(entries[1].labels.at("determined"), "predicted");
  EXPECT_EQ(entries.back().labels.at("fitted_on"), "gpt-1.7b");
  EXPECT_DOUBLE_EQ(entries[9].counters.at("published_tflops_per_gpu"), 163);
}

}  // namespace
}  // namespace dsgd::simulate
