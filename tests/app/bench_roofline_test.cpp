// `dsgd bench roofline`: the roof (peak and STREAM slope), every kernel under or on it by arithmetic intensity, and
// its options refused with one line.
#include <gtest/gtest.h>

#include <map>

#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

using dsgd::testing::contains;

using AppBenchRoofline = dsgd::testing::CliScratchTest;

TEST_F(AppBenchRoofline, PlacesTheKernelsUnderTheRoof) {
  const auto file = dir_ / "roofline.json";
  const auto outcome = dsgd({"bench", "roofline", "--sgemm-sizes", "64,256", "--repetitions", "3", "--batch", "16",
                             "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "roofline of this machine: peak")) << outcome.out;
  double peak = 0;
  double bandwidth = 0;
  std::map<std::string, int> kernels;
  int roof = 0;
  const auto results = reports::read_results(file);
  for (const auto& entry : results.benchmarks) {
    const auto& kind = entry.labels.at("kind");
    if (kind == "machine") {
      peak = entry.counters.at("gflops");
      bandwidth = entry.counters.at("stream_Bps");
    }
    roof += kind == "roof" ? 1 : 0;
    if (kind == "kernel") ++kernels[entry.labels.at("series")];
  }
  EXPECT_EQ(roof, 3);
  EXPECT_GT(peak, 1);
  EXPECT_GT(bandwidth, 1e8);
  EXPECT_EQ(kernels["OpenBLAS sgemm"], 2);
  EXPECT_EQ(kernels["lenet conv"], 1);
  EXPECT_EQ(kernels["lenet gemm"], 1);
  EXPECT_EQ(kernels["STREAM triad"], 1);
  for (const auto& entry : results.benchmarks) {
    if (entry.labels.at("kind") != "kernel") continue;
    // The peak is at least every kernel's rate (it is raised to the fastest one).
    EXPECT_LE(entry.counters.at("gflops"), peak * (1 + 1e-9)) << entry.name;
    EXPECT_GT(entry.counters.at("intensity_flop_per_byte"), 0) << entry.name;
  }
}

TEST_F(AppBenchRoofline, RefusesBadOptions) {
  auto outcome = dsgd({"bench", "roofline", "--batch", "0"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "dsgd: bench roofline: --batch and --repetitions must be >= 1\n");
  outcome = dsgd({"bench", "roofline", "--model", "lenet5"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "unknown model 'lenet5'")) << outcome.err;
}

}  // namespace
}  // namespace dsgd::app
