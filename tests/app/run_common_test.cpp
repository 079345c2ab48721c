#include "app/run_common.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/breakdown.hpp"

namespace dsgd::app {
namespace {

// A measured run's entry takes its Table 3 shares from core/breakdown.hpp, as the simulated studies do
// (tests/simulate/scaling_study_test.cpp holds the studies to the same function): equal category times, equal
// comm ratio.
TEST(AppRunCommon, MeasuredRunsShareTheTable3DefinitionOfSimulatedOnes) {
  algorithms::RunResult result;
  result.info.has_master = true;
  result.ranks = 2;
  result.per_rank = {Breakdown::of({{Category::kCpuUpdate, 0.5}, {Category::kWait, 9}}),
                     Breakdown::of({{Category::kCpuGpuPara, 2},
                                    {Category::kNetwork, 1},
                                    {Category::kForwardBackward, 6},
                                    {Category::kWait, 4}})};
  const reports::Entry entry = run_entry(RunCli{}, result, "threads");
  const Table3Shares expected = table3_shares(result.per_rank, true);
  EXPECT_DOUBLE_EQ(entry.counters.at("comm_ratio"), expected.comm_ratio);
  EXPECT_DOUBLE_EQ(entry.counters.at("comm_ratio"), 3.0 / 9.5);
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    EXPECT_DOUBLE_EQ(entry.counters.at("share:" + std::string(kCategoryNames[i])), expected.shares.seconds[i])
        << kCategoryNames[i];
  }
  EXPECT_DOUBLE_EQ(entry.counters.at("idle_share"), 4.0 / 13.5);
}

TEST(AppRunCommon, ATargetNotReachedIsSaidAndRecorded) {
  RunCli cli;
  cli.run.budget.target_accuracy = 0.85;
  algorithms::RunResult result;
  result.stop_reason = "iterations";
  result.curve.push_back({100, 6400, 1.5, 0.8, 0.5, 0.6});
  auto entry = run_entry(cli, result, "simgrid");
  EXPECT_EQ(entry.labels.at("target_reached"), "no");
  EXPECT_NE(run_summary(cli, entry).find("target accuracy 0.85 not reached within the budget (stopped by iterations)"),
            std::string::npos)
      << run_summary(cli, entry);
  result.stop_reason = "target accuracy";
  result.time_to_target_s = 1.5;
  entry = run_entry(cli, result, "simgrid");
  EXPECT_EQ(entry.labels.at("target_reached"), "yes");
  EXPECT_EQ(run_summary(cli, entry).find("not reached"), std::string::npos);
}

// A parameter server's staleness goes into the entry as counters and a histogram curve.
TEST(AppRunCommon, StalenessBecomesCountersAndAHistogram) {
  algorithms::RunResult result;
  result.staleness.add(3, 90);
  result.staleness.add(12, 10);
  const auto entry = run_entry(RunCli{}, result, "simgrid");
  EXPECT_DOUBLE_EQ(entry.counters.at("staleness_mean"), (3 * 90 + 12 * 10) / 100.0);
  EXPECT_DOUBLE_EQ(entry.counters.at("staleness_p99"), 12);
  EXPECT_DOUBLE_EQ(entry.counters.at("staleness_max"), 12);
  EXPECT_DOUBLE_EQ(entry.counters.at("pushes"), 100);
  const auto& histogram = entry.curves.back();
  EXPECT_EQ(histogram.name, "staleness_histogram");
  EXPECT_EQ(histogram.points, (std::vector<std::pair<double, double>>{{3, 90}, {12, 10}}));
}

// dsgd-mpi run parses the arguments run_arguments writes with the same add_run_options: the large-batch rules reach
// the MPI ranks as the threads executor has them, and the results entry records them.
TEST(AppRunCommon, LargeBatchRulesTravelToDsgdMpiAndIntoTheEntry) {
  RunCli cli;
  cli.run.workers = 4;
  cli.run.hyper.batch = 64;
  cli.run.hyper.learning_rate = 0.01F;
  cli.run.hyper.lr_scaling = nn::LrScaling::kLinear;
  cli.run.hyper.reference_batch = 128;
  cli.run.hyper.warmup_iterations = 37;
  cli.run.hyper.lars = true;
  cli.run.hyper.lars_trust = 0.0025F;
  cli.run.budget.iterations = 10;

  CLI::App app;
  RunCli parsed;
  add_run_options(app, parsed);
  const auto arguments = run_arguments(cli);
  app.parse(std::vector<std::string>(arguments.rbegin(), arguments.rend()));  // CLI11 takes them last-first
  EXPECT_EQ(parsed.run.hyper.lr_scaling, nn::LrScaling::kLinear);
  EXPECT_EQ(parsed.run.hyper.reference_batch, 128);
  EXPECT_EQ(parsed.run.hyper.warmup_iterations, 37);
  EXPECT_TRUE(parsed.run.hyper.lars);
  EXPECT_EQ(parsed.run.hyper.lars_trust, 0.0025F);

  const reports::Entry entry = run_entry(cli, algorithms::RunResult{}, "mpi");
  EXPECT_EQ(entry.algorithm_options.at("lr_scaling"), "linear");
  EXPECT_EQ(entry.algorithm_options.at("reference_batch"), 128);
  EXPECT_EQ(entry.algorithm_options.at("global_batch"), 256);
  EXPECT_EQ(entry.algorithm_options.at("scaled_learning_rate").get<double>(), 0.02F);  // 0.01 x 256 / 128
  EXPECT_EQ(entry.algorithm_options.at("warmup_iterations"), 37);
  EXPECT_EQ(entry.algorithm_options.at("lars"), true);
  EXPECT_EQ(entry.algorithm_options.at("lars_trust").get<double>(), 0.0025F);

  CLI::App strict;
  RunCli unused;
  add_run_options(strict, unused);
  EXPECT_THROW(strict.parse(std::vector<std::string>{"sqrt", "--lr-scaling"}), UnknownNameError);
}

}  // namespace
}  // namespace dsgd::app
