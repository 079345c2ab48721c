// simulate/device_study_entries.hpp: the P100 study as its results entries, one per row with the row's rates and
// kernels, and the FITTED efficiency last.
#include "simulate/device_study_entries.hpp"

#include <gtest/gtest.h>

namespace dsgd::simulate {
namespace {

TEST(SimulateDeviceStudyEntries, OnePointPerRowThenTheFittedEfficiency) {
  const auto outcome = run_device_study(algorithms::find_device_study("p100"));
  const auto entries = to_entries(outcome);
  ASSERT_EQ(entries.size(), outcome.rows.size() + 1);
  for (std::size_t i = 0; i < outcome.rows.size(); ++i) {
    const auto& row = outcome.rows[i];
    const auto& entry = entries[i];
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(entry.name, "study/p100/" + row.model + "/batch" + std::to_string(row.batch));
    EXPECT_EQ(entry.executor, "simgrid");
    EXPECT_EQ(entry.fidelity, "kernel model");
    EXPECT_EQ(entry.platform, outcome.platform);
    EXPECT_EQ(entry.model, row.model);
    EXPECT_EQ(entry.labels.at("study"), "p100");
    EXPECT_EQ(entry.labels.at("kind"), "point");
    EXPECT_EQ(entry.labels.at("device"), outcome.device);
    EXPECT_EQ(entry.labels.at("determined"), to_string(row.determined));
    EXPECT_EQ(entry.counters.at("batch"), row.batch);
    EXPECT_EQ(entry.counters.at("images_per_second"), row.images_per_second);
    EXPECT_EQ(entry.counters.at("published_images_per_second"), row.published);
    EXPECT_EQ(entry.counters.at("difference_percent"), row.difference_percent);
    EXPECT_EQ(entry.counters.at("seconds_per_iteration"), row.iteration.seconds);
    EXPECT_EQ(entry.counters.at("kernels"), row.iteration.kernels);
    EXPECT_EQ(entry.counters.at("winograd_kernels"), row.iteration.winograd_kernels);
  }
  const auto& fitted = entries.back();
  EXPECT_EQ(fitted.name, "study/p100/fitted/efficiency");
  EXPECT_EQ(fitted.labels.at("kind"), "fitted");
  EXPECT_EQ(fitted.labels.at("fitted_on"), outcome.fitted_on);
  EXPECT_EQ(fitted.counters.at("efficiency"), outcome.efficiency);
  EXPECT_GT(outcome.efficiency, 0);
}

}  // namespace
}  // namespace dsgd::simulate
