// measure/validation_entry.hpp: a row of `dsgd validate` as one results entry -- the first run kept, later runs'
// breakdowns summed into it, the predicted breakdown averaged over the repetitions, the measured one per steady
// iteration, and the median run's numbers. On synthetic runs with known answers.

#include "measure/validation_entry.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd::measure {
namespace {

// A run of 30 iterations in rounds of 10 (the first a warm-up): 4 s of for/backward, 1 s in the first round.
reports::Entry run(const std::string& name, double seconds_per_round) {
  reports::Entry entry;
  entry.name = name;
  entry.breakdown_s["for/backward"] = 4;
  entry.counters["first_round_s:for/backward"] = 1;
  entry.curves = {{"test_accuracy", "time_s", "accuracy", {{1, 0.1}, {1 + seconds_per_round, 0.2}}},
                  {"test_accuracy_by_iteration", "iteration", "accuracy", {{10, 0.1}, {20, 0.2}}}};
  return entry;
}

TEST(MeasureValidationEntry, ARowOfTwoRunsSumsMeasuredAndAveragesPredicted) {
  const RowShape shape{2, 10, 30, false};
  RowRuns runs;
  reports::Entry entry;
  const Breakdown predicted = Breakdown::of({{Category::kForwardBackward, 3.0}});
  for (int index = 0; index < 2; ++index) {
    RunMeasurement measured;
    measured.seconds_per_iteration = steady_seconds_per_iteration(run("r", 0.5 + index));
    runs.add(measured, 0.1);
    add_repetition(entry, index, run("run" + std::to_string(index), 0.5 + index), measured, 0.1, &predicted, shape);
  }
  finish_row(entry, runs, shape, "simgrid, test");
  EXPECT_EQ(entry.name, "run0") << "the first run is the entry";
  EXPECT_DOUBLE_EQ(entry.counters.at("repetition1_measured_s_per_iteration"), 0.15);
  EXPECT_DOUBLE_EQ(entry.breakdown_s.at("for/backward"), 8);
  // 3 s over 30 iterations in each of the two runs, averaged: 0.1 s per iteration.
  EXPECT_DOUBLE_EQ(entry.counters.at("predicted_s_per_iteration:for/backward"), 0.1);
  // (8 - 2) s over 2 x 20 steady iterations.
  EXPECT_DOUBLE_EQ(entry.counters.at("measured_s_per_iteration:for/backward"), 0.15);
  EXPECT_DOUBLE_EQ(entry.counters.at("measured_s_per_iteration"), 0.1) << "the median of 0.05 and 0.15";
  EXPECT_DOUBLE_EQ(entry.counters.at("runs"), 2);
  EXPECT_EQ(entry.labels.at("prediction"), "simgrid, test");
}

TEST(MeasureValidationEntry, ARunWithoutRoundsIsAnInternalError) {
  reports::Entry entry;
  entry.name = "no-curves";
  EXPECT_THROW(steady_seconds_per_iteration(entry), InternalError);
}

}  // namespace
}  // namespace dsgd::measure
