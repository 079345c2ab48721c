// `dsgd lost-updates` end to end through the command line: the table, the results file (one entry per row, with
// counters), and bad options rejected with exit code 2 and one line. Lost counts are measurements: only their range
// is checked, and that the fetch_add control loses nothing.
#include <gtest/gtest.h>

#include <sstream>

#include "app/cli.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

using dsgd::testing::contains;

using AppLostUpdates = dsgd::testing::CliScratchTest;  // a fresh folder per test, and dsgd(args)

TEST_F(AppLostUpdates, PrintsTheTableAndWritesOneEntryPerRow) {
  for (const std::string variant : {"spread", "hot", "fetch-add"}) {
    const auto file = dir_ / (variant + ".json");
    const auto outcome = dsgd({"lost-updates", "--variant", variant, "--threads", "1,2", "--floats", "16,1000",
                               "--additions", "2000", "--repeats", "2", "--results", file.string()});
    ASSERT_EQ(outcome.code, 0) << outcome.err;
    EXPECT_TRUE(contains(outcome.out, "lost updates, " + variant + " variant")) << outcome.out;
    EXPECT_TRUE(contains(outcome.out, "lost %")) << outcome.out;
    const auto results = reports::read_results(file);
    ASSERT_EQ(results.benchmarks.size(), 4U);
    for (const auto& entry : results.benchmarks) {
      EXPECT_EQ(entry.executor, "threads");
      EXPECT_EQ(entry.fidelity, "measured");
      EXPECT_EQ(entry.labels.at("variant"), variant);
      EXPECT_EQ(entry.iterations, 2);
      const double additions = entry.counters.at("additions");
      EXPECT_EQ(additions, static_cast<double>(entry.ranks) * 2000 * entry.counters.at("floats")) << entry.name;
      const double lost = entry.counters.at("lost");  // over both runs
      EXPECT_GE(lost, 0) << entry.name;
      EXPECT_LE(lost, 2 * additions) << entry.name;
      EXPECT_LE(entry.counters.at("lost_min"), entry.counters.at("lost_max")) << entry.name;
      EXPECT_GT(entry.counters.at("additions_per_s"), 0) << entry.name;
      EXPECT_GE(entry.counters.at("parallelism"), 0) << entry.name;
      if (entry.ranks == 1 || variant == "fetch-add") {
        EXPECT_EQ(lost, 0) << entry.name;
      }
    }
    EXPECT_EQ(results.benchmarks.front().name, "lost_updates/" + variant + "/1/16");
  }
}

using AppLostUpdatesOptions = dsgd::testing::CliScratchTest;  // writes nothing: for dsgd(args)

TEST_F(AppLostUpdatesOptions, BadOptionsExitTwoWithOneLine) {
  auto outcome = dsgd({"lost-updates", "--variant", "cold"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_EQ(outcome.err, "dsgd: unknown lost-update variant 'cold'; valid values are: spread, hot, fetch-add\n");
  outcome = dsgd({"lost-updates", "--threads", "2", "--floats", "16", "--additions", "10000000"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "must stay below 2^24")) << outcome.err;
  outcome = dsgd({"lost-updates", "--threads", "0", "--floats", "16"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "thread counts must be at least 1, got 0")) << outcome.err;
  outcome = dsgd({"lost-updates", "--repeats", "0"});
  EXPECT_EQ(outcome.code, kExitUsage);
  outcome = dsgd({"lost-updates", "--floats", "many"});
  EXPECT_EQ(outcome.code, kExitUsage);
  outcome = dsgd({"lost-updates", "--help"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_TRUE(contains(outcome.out, "--variant")) << outcome.out;
}

}  // namespace
}  // namespace dsgd::app
