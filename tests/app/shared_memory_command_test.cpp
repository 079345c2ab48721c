// `dsgd shared-memory`: seed 003's studies end to end on small generated data, through the command line.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "app/cli.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

using dsgd::testing::contains;

using AppSharedMemory = dsgd::testing::CliScratchTest;  // a fresh folder per test, and dsgd(args)

const reports::Entry* find_entry(const reports::Results& results, const std::string& kind, const std::string& method) {
  for (const auto& entry : results.benchmarks) {
    if (entry.labels.at("kind") == kind && entry.algorithm == method) return &entry;
  }
  return nullptr;
}

TEST_F(AppSharedMemory, ComparisonNamesAWinnerAndEveryMethodReachesTheTarget) {
  const auto file = dir_ / "comparison.json";
  const auto outcome = dsgd({"shared-memory", "--study", "comparison", "--datasets", "covtype-like", "--alphas",
                             "0.1,1", "--batches", "256", "--max-passes", "40", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "HogBatch against the best other method")) << outcome.out;
  const auto results = reports::read_results(file);
  const auto* summary = find_entry(results, "dataset", "");
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(summary->dataset, "covtype-like");
  EXPECT_NE(summary->labels.at("winner"), "none reached 99.5%");
  EXPECT_EQ(summary->counters.at("paper_speedup"), 20.16);
  EXPECT_GT(summary->counters.at("optimum_objective"), 0.0);
  int methods = 0;
  for (const auto& entry : results.benchmarks) {
    if (entry.labels.at("kind") != "method") continue;
    ++methods;
    EXPECT_EQ(entry.labels.at("reached"), "yes") << entry.algorithm;
    EXPECT_GE(entry.counters.at("final_closeness_percent"), 99.5) << entry.algorithm;
    ASSERT_EQ(entry.curves.size(), 2U);
    EXPECT_EQ(entry.curves.front().points.size(), static_cast<std::size_t>(entry.counters.at("passes_to_target")));
  }
  EXPECT_EQ(methods, 5);  // every single-model method of the catalog
}

TEST_F(AppSharedMemory, StalenessInLockstepStaysWithinTheTablesBounds) {
  const auto file = dir_ / "staleness.json";
  const auto outcome = dsgd({"shared-memory", "--study", "staleness", "--datasets", "w8a-like", "--threads", "4",
                             "--staleness-batch", "64", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto results = reports::read_results(file);
  int lockstep = 0;
  for (const auto& entry : results.benchmarks) {
    if (entry.labels.at("schedule") != "lockstep") continue;
    ++lockstep;
    EXPECT_EQ(entry.labels.at("within_bounds"), "yes") << entry.algorithm;
    EXPECT_EQ(entry.counters.at("measured_min"), entry.counters.at("bound_min")) << entry.algorithm;
    EXPECT_GT(entry.counters.at("writes"), 0.0) << entry.algorithm;
  }
  EXPECT_EQ(lockstep, 5);
}

TEST_F(AppSharedMemory, MeshPredictsASpeedUpPerCoreCount) {
  const auto file = dir_ / "mesh.json";
  const auto outcome = dsgd({"shared-memory", "--study", "mesh", "--datasets", "covtype-like", "--cores", "1,4",
                             "--mesh-batch", "64", "--alphas", "0.1,1", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "Predicted speed-up over Serial")) << outcome.out;
  const auto results = reports::read_results(file);
  ASSERT_EQ(results.benchmarks.size(), 2U);
  const auto& one = results.benchmarks.front();
  const auto& four = results.benchmarks.back();
  EXPECT_EQ(one.ranks, 1);
  EXPECT_EQ(four.ranks, 4);
  EXPECT_EQ(one.counters.at("read_s"), 0.0);  // one core: nothing to fetch from another
  EXPECT_GT(four.counters.at("read_s") + four.counters.at("write_s"), 0.0);
  EXPECT_GT(four.counters.at("hardware_speedup"), one.counters.at("hardware_speedup"));
  EXPECT_LT(four.counters.at("hardware_speedup"), 4.0);  // coherence traffic costs something
  EXPECT_TRUE(contains(four.labels.at("assumed"), "in-order penalty 2")) << four.labels.at("assumed");
}

TEST_F(AppSharedMemory, BadStudyOrDataIsAUsageError) {
  const auto study = dsgd({"shared-memory", "--study", "nosuch"});
  EXPECT_EQ(study.code, 2) << study.err;
  EXPECT_TRUE(contains(study.err, "nosuch")) << study.err;
  const auto data = dsgd({"shared-memory", "--datasets", "nosuch-like"});
  EXPECT_EQ(data.code, 2) << data.err;
  EXPECT_TRUE(contains(data.err, "nosuch-like")) << data.err;
  const auto file = dsgd({"shared-memory", "--datasets", "libsvm:" + (dir_ / "missing.svm").string()});
  EXPECT_NE(file.code, 0) << file.err;
  EXPECT_TRUE(contains(file.err, "missing.svm")) << file.err;
}

}  // namespace
}  // namespace dsgd::app
