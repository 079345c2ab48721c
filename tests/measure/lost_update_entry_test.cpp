// measure/lost_update_entry.hpp: a row of the lost-update experiment as its results entry. A measured row of the
// fetch_add control (which loses nothing) gives the sizes and names; a row written here gives lost counts whose
// sum, fewest and most are known.
#include "measure/lost_update_entry.hpp"

#include <gtest/gtest.h>

namespace dsgd::measure {
namespace {

TEST(MeasureLostUpdateEntry, AMeasuredRowGivesItsSizesTimesAndNothingLost) {
  LostUpdateOptions options;
  options.variant = LostUpdateVariant::kFetchAdd;
  options.threads = {2};
  options.floats = {16};
  options.additions_per_element = 100;
  options.repeats = 2;
  const auto rows = measure_lost_updates(options);
  ASSERT_EQ(rows.size(), 1U);
  const auto& row = rows.front();
  const auto entry = to_entry(row);
  EXPECT_EQ(entry.name, "lost_updates/fetch-add/2/16");
  EXPECT_EQ(entry.executor, "threads");
  EXPECT_EQ(entry.fidelity, "measured");
  EXPECT_EQ(entry.ranks, 2);
  EXPECT_EQ(entry.iterations, 2);
  EXPECT_EQ(entry.labels.at("variant"), "fetch-add");
  EXPECT_EQ(entry.real_time, row.median_seconds());
  EXPECT_EQ(entry.cpu_time, row.parallelism() * row.median_seconds());
  EXPECT_EQ(entry.counters.at("floats"), 16);
  EXPECT_EQ(entry.counters.at("additions_per_element"), 100);
  EXPECT_EQ(entry.counters.at("additions"), 2 * 100 * 16);
  EXPECT_EQ(entry.counters.at("repeats"), 2);
  EXPECT_EQ(entry.counters.at("lost"), 0);
  EXPECT_EQ(entry.counters.at("lost_percent"), 0);
  EXPECT_EQ(entry.counters.at("seconds"), row.median_seconds());
  EXPECT_EQ(entry.counters.at("additions_per_s"), row.additions_per_second());
  EXPECT_EQ(entry.counters.at("parallelism"), row.parallelism());
}

TEST(MeasureLostUpdateEntry, LostCountsAreTheSumTheFewestAndTheMostOfTheRuns) {
  LostUpdateRow row;
  row.variant = LostUpdateVariant::kHot;
  row.threads = 4;
  row.floats = 16;
  row.additions_per_element = 25;
  row.additions = 4 * 25 * 16;  // 1600 per run
  row.lost = {8, 0, 16};
  row.seconds = {0.5, 0.25, 1};
  row.cpu_seconds = {1, 0.5, 2};
  const auto entry = to_entry(row);
  EXPECT_EQ(entry.name, "lost_updates/hot/4/16");
  EXPECT_EQ(entry.iterations, 3);
  EXPECT_EQ(entry.real_time, 0.5);  // the median run
  EXPECT_EQ(entry.cpu_time, 1);     // parallelism 2 over the median run
  EXPECT_EQ(entry.counters.at("lost"), 24);
  EXPECT_EQ(entry.counters.at("lost_min"), 0);
  EXPECT_EQ(entry.counters.at("lost_max"), 16);
  EXPECT_EQ(entry.counters.at("lost_percent"), 0.5);  // 24 of 3 x 1600
  EXPECT_EQ(entry.counters.at("additions_per_s"), 3200);
  EXPECT_EQ(entry.counters.at("parallelism"), 2);
}

}  // namespace
}  // namespace dsgd::measure
