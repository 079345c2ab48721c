// `dsgd bench gemm` end to end: the distributed product under real mpirun (dsgd-mpi gemm) and on threads, checked
// against single-rank sgemm, with OpenBLAS's whole product beside it and a SimGrid prediction of the same points;
// seed 001 Table V's study; and the inputs it refuses with exit code 2 and one line, before anything runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "algorithms/dmath/gemm_bench.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

using dsgd::testing::contains;

using AppBenchGemm = dsgd::testing::CliScratchTest;  // a fresh folder per test, and dsgd(args)

// The product's entries: one per point, checked within the bound; sgemm's on 1 and R threads beside them.
void expect_checked_points(const reports::Results& results, const std::string& executor, int ranks) {
  int points = 0;
  int baselines = 0;
  int predictions = 0;
  for (const auto& entry : results.benchmarks) {
    if (entry.algorithm == "sgemm") {
      ++baselines;
      EXPECT_GT(entry.counters.at("gflops"), 0) << entry.name;
      continue;
    }
    if (entry.executor == "simgrid") {
      ++predictions;
      EXPECT_EQ(entry.counters.count("relative_error"), 0U) << "a prediction checks nothing: " << entry.name;
      EXPECT_GT(entry.real_time, 0) << entry.name;
      continue;
    }
    ++points;
    EXPECT_EQ(entry.executor, executor);
    EXPECT_EQ(entry.fidelity, "measured");
    EXPECT_EQ(entry.ranks, ranks);
    EXPECT_LE(entry.counters.at("relative_error"), algorithms::dmath::kGemmErrorBound) << entry.name;
    EXPECT_GT(entry.counters.at("bytes_sent_per_rank"), 0) << entry.name;
    EXPECT_TRUE(contains(entry.labels.at("local_gemm"), "OpenBLAS")) << entry.name;
  }
  EXPECT_EQ(points, 2);
  EXPECT_EQ(baselines, 4);  // two sizes, 1 and `ranks` threads
  EXPECT_EQ(predictions, 2);
}

// The real executable (dsgd-mpi is found beside it), as a user runs it.
TEST_F(AppBenchGemm, MeasuresTheProductUnderMpirunBesideSgemmAndItsPrediction) {
  const auto file = dir_ / "gemm.json";
  const auto outcome =
      dsgd::testing::run_dsgd_executable({"bench", "gemm", "--executor", "mpi", "--ranks", "2", "--sizes", "96,160",
                                          "--rounds", "2", "--predict", "m40-cluster", "--results", file.string()});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_TRUE(contains(outcome.output, "gemm (cyclic), mpi executor")) << outcome.output;
  EXPECT_TRUE(contains(outcome.output, "predicted s")) << outcome.output;
  expect_checked_points(reports::read_results(file), "mpi", 2);
}

TEST_F(AppBenchGemm, RunsSummaOnThreads) {
  const auto file = dir_ / "summa.json";
  const auto outcome = dsgd({"bench", "gemm", "--algorithm", "summa", "--ranks", "4", "--sizes", "64,100",
                             "--panel-width", "16", "--predict", "m40-cluster", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err << outcome.out;
  expect_checked_points(reports::read_results(file), "threads", 4);
}

TEST_F(AppBenchGemm, PredictsInSimgridAlone) {
  const auto outcome = dsgd({"bench", "gemm", "--executor", "simgrid", "--platform", "k80-cluster", "--ranks", "1,8",
                             "--sizes", "4096", "--transposed"});
  ASSERT_EQ(outcome.code, 0) << outcome.err << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "predicted on k80-cluster")) << outcome.out;
}

// The cells of seed 001 Table V's study: the fitted value's entry, then each cell's, checked as each role says.
struct Table5Cells {
  int fitted_values = 0;
  int points = 0;
  int fitted_cells = 0;
};

Table5Cells check_table5_cells(const std::filesystem::path& file) {
  Table5Cells cells;
  for (const auto& entry : reports::read_results(file).benchmarks) {
    if (entry.labels.at("kind") == "fitted") {
      ++cells.fitted_values;
      EXPECT_GT(entry.counters.at("value"), 0.3) << "a K80's sgemm runs well above a third of its peak";
      EXPECT_LE(entry.counters.at("value"), 1.0);
      continue;
    }
    ++cells.points;
    const std::string role = entry.labels.at("role");
    const double gpus = entry.counters.at("gpus");
    if (role == "fitted") {
      ++cells.fitted_cells;
      EXPECT_EQ(entry.counters.at("size"), 16384);
      EXPECT_EQ(gpus, 1);
      EXPECT_NEAR(entry.counters.at("predicted_seconds"), 3.340, 3.340 * 1e-3);
    } else if (role == "does not fit") {
      EXPECT_EQ(entry.counters.count("predicted_seconds"), 0U) << entry.name;
    } else {
      EXPECT_EQ(role, "predicted") << entry.name;
      EXPECT_GT(entry.counters.at("predicted_seconds"), 0) << entry.name;
    }
  }
  return cells;
}

// Seed 001 Table V on k80-dmath: every cell predicted (or refused for memory) with the one efficiency the K80's
// platform carries, FITTED by its device study on a DNN rate; cuBLAS's 1-GPU products come out within 15% of it.
TEST_F(AppBenchGemm, PredictsTableVWithTheK80sOneFittedEfficiency) {
  const auto file = dir_ / "table5.json";
  const auto outcome = dsgd({"bench", "gemm", "--study", "table5", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "FITTED kernel-model efficiency of a NVIDIA Tesla K80")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "--study k80")) << outcome.out;
  const Table5Cells cells = check_table5_cells(file);
  EXPECT_EQ(cells.fitted_values, 1);
  EXPECT_EQ(cells.fitted_cells, 0);
  EXPECT_EQ(cells.points, 9 * 4);
  for (const auto& entry : reports::read_results(file).benchmarks) {
    if (entry.labels.at("kind") == "point" && entry.counters.at("gpus") == 1 && entry.counters.count("diff_percent")) {
      EXPECT_LE(std::abs(entry.counters.at("diff_percent")), 15) << entry.name;
    }
  }
}

// A GPU without a kernel model gets a gemm efficiency fitted on one cell: that cell fitted, every other predicted.
TEST_F(AppBenchGemm, PredictsTableVWithOneFittedCellOnAGpuWithoutAKernelModel) {
  auto json = platforms::to_json(platforms::catalog_platform("k80-dmath"));
  for (auto& device : json["nodes"]["devices"]) device.erase("kernels");
  const auto platform_file = dir_ / "k80-plain.json";
  std::ofstream(platform_file) << json.dump(1);
  const auto file = dir_ / "table5.json";
  const auto outcome =
      dsgd({"bench", "gemm", "--study", "table5", "--platform", platform_file.string(), "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "FITTED gemm efficiency of a NVIDIA Tesla K80")) << outcome.out;
  const Table5Cells cells = check_table5_cells(file);
  EXPECT_EQ(cells.fitted_values, 1);
  EXPECT_EQ(cells.fitted_cells, 1);
  EXPECT_EQ(cells.points, 9 * 4);
}

TEST_F(AppBenchGemm, RefusesImpossibleSizesAndNamesWithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--sizes", "3", "--ranks", "4"}, "gemm bench: a 3 x 3 product cannot be split over 4 ranks (cyclic)"},
      {{"--algorithm", "fox"}, "unknown distributed gemm algorithm 'fox'"},
      {{"--ranks", "0"}, "gemm bench: at least 1 rank, got 0"},
      {{"--rounds", "0"}, "gemm bench: at least 1 round, got 0"},
      {{"--sizes", "200000", "--memory-limit", "1GB"}, "bench gemm: size 200000 on 2 ranks: an estimated"},
      {{"--executor", "simgrid"}, "bench gemm: --executor simgrid needs --platform"},
      {{"--study", "table6"}, "unknown gemm study 'table6'"},
  };
  for (const auto& [options, message] : cases) {
    std::vector<std::string> args = {"bench", "gemm"};
    args.insert(args.end(), options.begin(), options.end());
    const auto outcome = dsgd(args);
    EXPECT_EQ(outcome.code, 2) << message;
    EXPECT_TRUE(contains(outcome.err, message)) << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  }
}

}  // namespace
}  // namespace dsgd::app
