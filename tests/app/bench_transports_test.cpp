// `dsgd bench transports` end to end: every transport this machine has at every size, with the MPI ping-pong
// under real mpirun (the real executable finds dsgd-mpi beside it), a platform's prediction and seed 001's tables
// beside them; and what it refuses.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/nn/backend.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

using dsgd::testing::contains;

using AppBenchTransports = dsgd::testing::CliScratchTest;

TEST_F(AppBenchTransports, TimesEveryTransportAtEverySizeBesideTheSeed) {
  const auto file = dir_ / "transports.json";
  const auto outcome = dsgd::testing::run_dsgd_executable(
      {"bench", "transports", "--max-bytes", "65536", "--predict", "k80-dmath", "--results", file.string()});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_TRUE(contains(outcome.output, "one-way latency (us) / bandwidth (MB/s)")) << outcome.output;
  std::map<std::string, std::set<double>> sizes;  // by transport
  for (const auto& entry : reports::read_results(file).benchmarks) {
    const auto& transport = entry.labels.at("transport");
    sizes[transport].insert(entry.counters.at("bytes"));
    EXPECT_GT(entry.counters.at("one_way_s"), 0) << entry.name;
    EXPECT_GT(entry.counters.at("bandwidth_MBps"), 0) << entry.name;
    if (entry.fidelity == "measured") {
      // A message cannot beat the bytes it carries at 10 TB/s, nor take a second here.
      EXPECT_LT(entry.counters.at("one_way_s"), 1.0) << entry.name;
      EXPECT_LT(entry.counters.at("bandwidth_MBps"), 1e7) << entry.name;
    }
  }
  const std::set<double> expected = {1, 4, 16, 64, 128, 256, 512, 1024, 4096, 16384, 65536};
  for (const std::string transport : {"memcpy", "threads", "mpi", "predicted: k80-dmath"}) {
    EXPECT_EQ(sizes[transport], expected) << transport;
  }
  EXPECT_EQ(sizes.count("cuda-h2d-pinned"), nn::backend_device_count("cuda") > 0 ? 1U : 0U);
  EXPECT_EQ(sizes["seed 001: CUDA P2P"].size(), 7U);
}

TEST_F(AppBenchTransports, RefusesWhatCannotRun) {
  auto outcome = dsgd({"bench", "transports", "--max-bytes", "0"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "dsgd: bench transports: --max-bytes must be at least 1\n");
  outcome = dsgd({"bench", "transports", "--launcher", "pbs"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "unknown launcher 'pbs'")) << outcome.err;
}

}  // namespace
}  // namespace dsgd::app
