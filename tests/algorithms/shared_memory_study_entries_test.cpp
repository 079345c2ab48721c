// algorithms/shared_memory/study_entries: the results entries of seed 003's studies carry the numbers of the outcome
// they are built from -- Table IV's speed-up and its published value, the winning run's curve, the staleness bounds.

#include <gtest/gtest.h>

#include "algorithms/shared_memory/study_entries.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

SweepResult reached_in(double seconds, int passes) {
  SweepResult sweep;
  sweep.reached = true;
  sweep.best.options.alpha = 0.1F;
  sweep.best.result.time_to_target_s = seconds;
  sweep.best.result.passes_to_target = passes;
  sweep.best.result.threads = 4;
  for (int pass = 1; pass <= passes; ++pass) {
    PassPoint point;
    point.pass = pass;
    point.seconds = seconds * pass / passes;
    point.closeness_percent = 90.0 + pass;
    sweep.best.result.curve.push_back(point);
  }
  sweep.all.push_back(sweep.best);
  return sweep;
}

TEST(SharedMemoryStudyEntries, ComparisonRowHoldsTheSpeedupAndThePublishedOne) {
  DatasetOutcome outcome;
  outcome.dataset = "rcv1-test-like";
  outcome.source = "RCV1-v1-test";
  outcome.stats.rows = 1000;
  outcome.methods = {{"hogwild", reached_in(3.0, 6)}, {"hogbatch", reached_in(1.5, 5)}};
  const auto entries = to_entries(outcome);
  ASSERT_EQ(entries.size(), 3U);
  EXPECT_EQ(entries[0].name, "shared-memory/comparison/rcv1-test-like/hogwild/4");
  EXPECT_DOUBLE_EQ(entries[1].counters.at("time_to_target_s"), 1.5);
  EXPECT_EQ(entries[1].curves.at(1).points.back(), std::make_pair(5.0, 95.0));
  const auto& row = entries[2];
  EXPECT_EQ(row.labels.at("kind"), "dataset");
  EXPECT_EQ(row.labels.at("winner"), "hogbatch");
  EXPECT_EQ(row.labels.at("best_alternative"), "hogwild");
  EXPECT_DOUBLE_EQ(row.counters.at("speedup"), 2.0);
  EXPECT_DOUBLE_EQ(row.counters.at("paper_speedup"), 2.43);  // Table IV's rcv1-test row
  EXPECT_DOUBLE_EQ(row.counters.at("rows"), 1000);
}

TEST(SharedMemoryStudyEntries, StalenessOutsideItsBoundsIsSaid) {
  StalenessOutcome outcome;
  outcome.method = "hogwild";
  outcome.schedule = "threads";
  outcome.threads = 8;
  outcome.measured = {100, 0, 9, 3.5, {}};
  outcome.expected = {0, 7};
  auto entry = to_entry(outcome, "rcv1-test-like");
  EXPECT_EQ(entry.labels.at("within_bounds"), "no");
  EXPECT_DOUBLE_EQ(entry.counters.at("measured_max"), 9);
  EXPECT_DOUBLE_EQ(entry.counters.at("writes"), 100);
  outcome.measured.max = 7;
  EXPECT_EQ(to_entry(outcome, "rcv1-test-like").labels.at("within_bounds"), "yes");
}

}  // namespace
}  // namespace dsgd::algorithms::shared_memory
