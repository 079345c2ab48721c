// `dsgd lasso` end to end: every scheduler on threads, under real mpirun (dsgd-mpi lasso) and in a numeric SimGrid
// simulation reaches the stored scikit-learn optimum of the tiny problem; the problem written for the reference script
// reads back; and the inputs it refuses with exit code 2 and one line, before anything runs.
#include <gtest/gtest.h>

#include "core/atomic_file.hpp"
#include "core/format.hpp"
#include "core/json.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

using dsgd::testing::contains;

using AppLasso = dsgd::testing::CliScratchTest;  // a fresh folder per test, and dsgd(args)

double stored_objective() {
  return read_json_file(std::filesystem::path(DSGD_TEST_DATA_DIR) / "strads_lasso_reference.json")
      .at("objective")
      .get<double>();
}

TEST_F(AppLasso, EverySchedulerReachesTheReferenceOnThreadsUnderMpirunAndInSimgrid) {
  const double reference = stored_objective();
  for (const std::string executor : {"threads", "mpi", "simgrid"}) {
    const auto file = dir_ / (executor + ".json");
    // The real executable (dsgd-mpi is found beside it), as a user runs it.
    std::vector<std::string> args = {"lasso",
                                     "--executor",
                                     executor,
                                     "--workers",
                                     "2",
                                     "--problem",
                                     "tiny",
                                     "--scheduler",
                                     "serial,shotgun,strads-static,strads-dynamic",
                                     "--coordinates",
                                     "4",
                                     "--rounds",
                                     "20000",
                                     "--eval-every",
                                     "20",
                                     "--target-objective",
                                     significant(reference * (1 + 1e-5), 17),
                                     "--results",
                                     file.string()};
    if (executor == "simgrid") args.insert(args.end(), {"--platform", "cori-haswell"});
    const auto outcome = dsgd::testing::run_dsgd_executable(args);
    ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
    const auto results = reports::read_results(file);
    ASSERT_EQ(results.benchmarks.size(), 4U);
    for (const auto& entry : results.benchmarks) {
      EXPECT_EQ(entry.executor, executor);
      EXPECT_EQ(entry.fidelity, executor == "simgrid" ? "message" : "measured") << entry.name;
      EXPECT_EQ(entry.ranks, 2);
      EXPECT_EQ(entry.labels.at("stop_reason"), "target objective") << entry.name;
      EXPECT_LE(std::abs(entry.counters.at("objective") - reference), 1e-4 * reference) << entry.name;
      EXPECT_GT(entry.curves.at(0).points.size(), 1U) << "the objective against time";
      EXPECT_TRUE(entry.counters.count("time_to_gap_s")) << entry.name;
    }
    EXPECT_TRUE(contains(outcome.output, "strads-dynamic, 2 workers on " + executor)) << outcome.output;
  }
}

TEST_F(AppLasso, WritesTheProblemForTheReferenceScript) {
  const auto file = dir_ / "tiny.libsvm";
  const auto outcome = dsgd({"lasso", "--problem", "tiny", "--write-problem", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "100 rows, 60 features")) << outcome.out;
  const auto again = dsgd(
      {"lasso", "--problem", "libsvm:" + file.string(), "--scheduler", "serial", "--workers", "1", "--rounds", "10"});
  EXPECT_EQ(again.code, 0) << again.err;
}

TEST_F(AppLasso, RefusesBadInputWithOneLine) {
  // Issue 42: labels of 3e38 made the objective inf at round 0, reported "within 0.001 of the best objective
  // (inf)", exit 0; --coordinates -1 was echoed as 18446744073709551615.
  const auto huge = dir_ / "huge.libsvm";
  write_file_atomically(huge, "3e38 1:1 2:1\n-3e38 1:1 3:1\n3e38 2:1 3:1\n-3e38 1:1\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"lasso", "--problem", "libsvm:" + huge.string()}, "before any update"},
      {{"lasso", "--problem", "tiny", "--coordinates", "-1"}, "--coordinates"},
      {{"lasso", "--scheduler", "greedy"}, "greedy"},
      {{"lasso", "--problem", "nonesuch"}, "nonesuch"},
      {{"lasso", "--problem", "tiny", "--coordinates", "61"}, "--coordinates 61"},
      {{"lasso", "--problem", "tiny", "--lambda-ratio", "-1"}, "lambda"},
      {{"lasso", "--executor", "simgrid"}, "--platform"},
      {{"lasso", "--executor", "analytic"}, "analytic"},
      {{"lasso", "--executor", "mpi", "--problem", "tiny", "--eval-every", "0"}, "--eval-every"},
      {{"lasso", "--executor", "mpi", "--problem", "tiny", "--tau", "2"}, "--tau 2"},
      {{"lasso", "--problem", "libsvm:/nonexistent/x.libsvm"}, "/nonexistent/x.libsvm"},
  };
  for (const auto& [args, named] : cases) {
    const auto outcome = dsgd(args);
    EXPECT_EQ(outcome.code, 2) << args.back();
    EXPECT_TRUE(contains(outcome.err, named)) << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  }
}

}  // namespace
}  // namespace dsgd::app
