// algorithms/strads/lasso_entry: across runs of one problem, the time to within a gap of the best objective and the
// speed-up over a baseline to the objective it ended with; on synthetic curves with known answers.

#include <gtest/gtest.h>

#include "algorithms/strads/lasso_entry.hpp"

namespace dsgd::algorithms::strads {
namespace {

reports::Entry run(const std::string& scheduler, std::vector<std::pair<double, double>> by_time) {
  reports::Entry entry;
  entry.algorithm = scheduler;
  entry.counters["objective"] = by_time.back().second;
  reports::Curve time{"objective", "time_s", "objective", by_time};
  reports::Curve rounds{"objective_by_round", "round", "objective", {}};
  for (std::size_t k = 0; k < by_time.size(); ++k)
    rounds.points.emplace_back(10.0 * static_cast<double>(k + 1), by_time[k].second);
  entry.curves = {time, rounds};
  return entry;
}

TEST(StradsLassoEntry, RunsAreComparedToTheBestObjectiveAndToEachBaseline) {
  std::vector<reports::Entry> runs{run("serial", {{1, 10}, {2, 5}, {4, 2}}),
                                   run("shotgun", {{0.5, 8}, {1, 2.02}, {2, 1.9}})};
  compare_runs(runs, 0.1);
  EXPECT_DOUBLE_EQ(runs[0].counters.at("best_objective_of_runs"), 1.9);
  // Within 10% of 1.9 (2.09): serial at 4 s (round 30), shotgun at 1 s (round 20).
  EXPECT_DOUBLE_EQ(runs[0].counters.at("time_to_gap_s"), 4);
  EXPECT_DOUBLE_EQ(runs[1].counters.at("rounds_to_gap"), 20);
  // To serial's final 2: serial took 4 s, shotgun 2 s. To shotgun's 1.9, serial never came.
  EXPECT_DOUBLE_EQ(runs[1].counters.at("speedup_over_serial"), 2);
  EXPECT_EQ(runs[0].counters.count("speedup_over_shotgun"), 0U);
  // The relative gap leaves out the best itself (no logarithm of 0).
  EXPECT_EQ(runs[1].curves.at(2).name, "relative_gap");
  EXPECT_EQ(runs[1].curves.at(2).points.size(), 2U);
  EXPECT_DOUBLE_EQ(runs[0].curves.at(2).points.back().second, 2 / 1.9 - 1);
}

}  // namespace
}  // namespace dsgd::algorithms::strads
