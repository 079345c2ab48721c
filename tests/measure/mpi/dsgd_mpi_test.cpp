// The MPI side end to end, as dsgd uses it: the dsgd-mpi worker under mpirun (measure/mpi/launch.hpp's command
// line), its failure path (a failing rank ends the world at once, with one line naming it), its results files,
// and `dsgd calibrate` writing a platform file that loads. This test links neither OpenMPI nor SimGrid: it runs
// the programs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/subprocess.hpp"
#include "measure/mpi/launch.hpp"
#include "platforms/loader.hpp"
#include "reports/results.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::measure::mpi {
namespace {

namespace fs = std::filesystem;
using dsgd::testing::error_of;

const std::string kWorker = std::string(DSGD_BINARY_DIR) + "/app/dsgd-mpi";
const std::string kDsgd = std::string(DSGD_BINARY_DIR) + "/app/dsgd";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

fs::path scratch(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("dsgd-mpi-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// The results file `file` the worker's `command` writes on `ranks` ranks; none, and a failure, when it does not exit 0
// (the tests' size assertions then stop them).
reports::Results worker_results(int ranks, std::vector<std::string> command, const fs::path& file) {
  command.insert(command.begin(), kWorker);
  command.insert(command.end(), {"--results", file.string()});
  const auto result = run_process(mpirun_command(ranks, command), std::chrono::seconds(120));
  if (result.exit_code != 0) {
    ADD_FAILURE() << "exit code " << result.exit_code << ": " << result.output;
    return {};
  }
  return reports::read_results(file);
}

// The worker's pingpong on 2 ranks refuses `option value` with exit code 2, saying `message`.
void expect_pingpong_refuses(const std::string& option, const std::string& value, const std::string& message) {
  const auto result = run_process(mpirun_command(2, {kWorker, "pingpong", option, value}), std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_TRUE(contains(result.output, message)) << result.output;
}

TEST(MeasureMpiLaunch, MpirunCommandLine) {
  const auto command = mpirun_command(3, {"prog", "arg"});
  ASSERT_GE(command.size(), 8U);
  EXPECT_EQ(command.front(), "mpirun");
  EXPECT_EQ(command[command.size() - 2], "prog");
  EXPECT_EQ(command.back(), "arg");
  const auto has = [&](const std::string& word) {
    return std::find(command.begin(), command.end(), word) != command.end();
  };
  EXPECT_TRUE(has("--oversubscribe"));
  EXPECT_TRUE(has("--bind-to"));
  EXPECT_TRUE(has("none"));
  EXPECT_TRUE(has("-np"));
  EXPECT_EQ(has("--allow-run-as-root"), ::geteuid() == 0);
  EXPECT_THROW(mpirun_command(0, {"prog"}), InputError);
  EXPECT_THROW(mpirun_command(2, {}), InputError);
}

// A hostfile of this machine's slots: the real mpirun starts the ranks from it; srun's line for a Slurm allocation.
TEST(MeasureMpiLaunch, AHostfileStartsRanksOnItsHostsAndSrunTakesSlurms) {
  const fs::path hostfile = fs::temp_directory_path() / ("dsgd-hostfile-" + std::to_string(::getpid()));
  {
    std::ofstream out(hostfile);
    out << "# this machine\nlocalhost slots=3  # three ranks\n\n";
  }
  MpiLaunchOptions options;
  options.hostfile = hostfile;
  options.extra_arguments = {"--mca", "btl", "self,vader"};
  const auto command = mpirun_command(3, {kWorker, "selftest"}, options);
  EXPECT_EQ(std::count(command.begin(), command.end(), "--oversubscribe"), 0);
  EXPECT_EQ(std::count(command.begin(), command.end(), hostfile.string()), 1);
  const auto result = run_process(command, std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "dsgd-mpi selftest: 3 ranks ok")) << result.output;
  EXPECT_EQ(error_of<InputError>([&] { check_launch(options, 4); }),
            "hostfile " + hostfile.string() + ": 3 slots, but the run needs 4 ranks");
  fs::remove(hostfile);

  MpiLaunchOptions srun;
  srun.launcher = "srun";
  srun.extra_arguments = {"-N", "2"};
  EXPECT_EQ(mpirun_command(4, {"prog"}, srun), (std::vector<std::string>{"srun", "-n", "4", "-N", "2", "prog"}));
  srun.hostfile = "hosts";
  EXPECT_EQ(error_of<InputError>([&] { check_launch(srun, 4); }),
            "--hostfile is mpirun's; srun takes its hosts from Slurm");
}

TEST(MeasureMpiLaunch, ABadHostfileIsRefusedWithItsFileAndLine) {
  const fs::path hostfile = fs::temp_directory_path() / ("dsgd-badhosts-" + std::to_string(::getpid()));
  const auto refused = [&](const std::string& text) {
    std::ofstream(hostfile) << text;
    MpiLaunchOptions options;
    options.hostfile = hostfile;
    return error_of<InputError>([&] { check_launch(options, 1); });
  };
  const std::string file = hostfile.string();
  const std::string host_rule = "expected a host name (letters, digits, '.', '-', '_'; not starting with '-'), got '";
  EXPECT_EQ(refused("node1 slots=2\nnode2 slots=0\n"), file + ":2: 'slots' needs a count from 1 to 1000000, got '0'");
  EXPECT_EQ(refused("node1 cpus=2\n"), file + ":1: expected slots=N or max_slots=N after the host, got 'cpus=2'");
  EXPECT_EQ(refused("slots=2\n"), file + ":1: " + host_rule + "slots=2'");
  EXPECT_EQ(refused("# only a comment\n"), "hostfile " + file + ": names no host");
  // Issue 42: a host "-F/path" that mpirun would read as an option, NUL bytes and raw escape sequences taken as a
  // host, slots=999999999 refused as "needs at least 1", and slots summed in 32 bits (2,148 lines of 999,999:
  // "-2146969444 slots").
  EXPECT_EQ(refused("-F/path slots=1\n"), file + ":1: " + host_rule + "-F/path'");
  EXPECT_EQ(refused(std::string("no\0de slots=1\n", 15)), file + ":1: " + host_rule + "no\\x00de'");
  EXPECT_EQ(refused("\x1b[31mred\xff\n"), file + ":1: " + host_rule + "\\x1b[31mred\\xff'");
  EXPECT_EQ(refused("node1 slots=999999999\n"), file + ":1: 'slots' needs a count from 1 to 1000000, got '999999999'");
  std::string many;
  for (int line = 0; line < 2148; ++line) many += "node" + std::to_string(line) + " slots=999999\n";
  std::ofstream(hostfile) << many;
  MpiLaunchOptions enough;
  enough.hostfile = hostfile;
  EXPECT_NO_THROW(check_launch(enough, 1)) << "2,147,997,852 slots, summed without wrapping";
  EXPECT_EQ(refused(std::string(2 << 20, '#')),
            "hostfile " + file + ": 2097152 bytes, more than a hostfile holds (at most 1048576)");
  fs::remove(hostfile);
  MpiLaunchOptions missing;
  missing.hostfile = hostfile;
  EXPECT_EQ(error_of<InputError>([&] { check_launch(missing, 1); }), "hostfile " + file + ": not a readable file");
  missing.hostfile.clear();
  missing.launcher = "qsub";
  EXPECT_THROW(check_launch(missing, 1), UnknownNameError);
}

TEST(MeasureMpiLaunch, SelftestPassesOnThreeRanks) {
  const auto result = run_process(mpirun_command(3, {kWorker, "selftest"}), std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "dsgd-mpi selftest: 3 ranks ok")) << result.output;
}

TEST(MeasureMpiLaunch, AFailingRankEndsTheWorldAtOnceAndSaysWhich) {
  // The other ranks wait (60 s timeout) for a message the failing rank never sends; MPI_Abort must end them.
  const auto start = std::chrono::steady_clock::now();
  const auto result =
      run_process(mpirun_command(3, {kWorker, "selftest", "--fail-rank", "1"}), std::chrono::seconds(50));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(seconds, 20.0) << "expectation: far below the 60 s the other ranks would wait";
  EXPECT_TRUE(contains(result.output, "dsgd-mpi: rank 1: selftest: rank 1 fails on purpose (--fail-rank)"))
      << result.output;
}

TEST(MeasureMpiLaunch, UsageErrorsExitTwoOnEveryRank) {
  const auto result =
      run_process(mpirun_command(2, {kWorker, "pingpong", "--no-such-option"}), std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_TRUE(contains(result.output, "--no-such-option")) << result.output;
}

TEST(MeasureMpiLaunch, PingpongAndAllreduceWriteResults) {
  const auto pingpong_file = scratch("pingpong.json");
  const auto pingpong = worker_results(2, {"pingpong", "--max-bytes", "65536", "--rounds", "2"}, pingpong_file);
  ASSERT_GE(pingpong.benchmarks.size(), 14U);  // 8 B .. 64 KiB plus the sizes near the eager limit
  for (const auto& entry : pingpong.benchmarks) {
    EXPECT_EQ(entry.executor, "mpi");
    EXPECT_GT(entry.counters.at("round_trip_s"), 0.0) << entry.name;
    EXPECT_GT(entry.counters.at("algbw_Bps"), 0.0) << entry.name;
    EXPECT_EQ(entry.counters.at("pool_bytes"), 0.0) << entry.name;
    EXPECT_EQ(entry.labels.at("buffers"), "from one warm buffer") << entry.name;
  }

  const auto allreduce_file = scratch("allreduce.json");
  const auto allreduce = worker_results(3, {"allreduce", "--max-floats", "3097600", "--rounds", "1"}, allreduce_file);
  ASSERT_EQ(allreduce.benchmarks.size(), 2U * 5U);  // 2 DeepBench sizes x (4 algorithms + MPI_Allreduce)
  for (const auto& entry : allreduce.benchmarks) {
    EXPECT_EQ(entry.ranks, 3);
    const double algbw = entry.counters.at("algbw_Bps");
    EXPECT_NEAR(entry.counters.at("busbw_Bps"), algbw * 2 * 2 / 3, algbw * 1e-9) << entry.name;
  }
  fs::remove_all(pingpong_file.parent_path());
}

TEST(MeasureMpiLaunch, PingpongFromColdBuffers) {
  const auto file = scratch("cold-pingpong.json");
  const auto results =
      worker_results(2, {"pingpong", "--max-bytes", "65536", "--rounds", "1", "--pool-bytes", "1048576"}, file);
  ASSERT_FALSE(results.benchmarks.empty());
  for (const auto& entry : results.benchmarks) {
    EXPECT_EQ(entry.counters.at("pool_bytes"), 1048576.0) << entry.name;
    EXPECT_EQ(entry.labels.at("buffers"), "from cold buffers (cycled through 1 MiB)") << entry.name;
    EXPECT_GT(entry.counters.at("round_trip_s"), 0.0) << entry.name;
  }
  expect_pingpong_refuses("--pool-bytes", "-1", "--pool-bytes must be >= 0");
  fs::remove_all(file.parent_path());
}

TEST(MeasureMpiLaunch, CalibrateWritesAPlatformThatLoads) {
  const auto out = scratch("this-machine.json");
  const auto kept = scratch("calibrate-pingpong.json");
  const auto result = run_process({kDsgd, "calibrate", "--max-bytes", "1048576", "--rounds", "2", "--nodes", "4",
                                   "--kernel-repetitions", "5", "--out", out.string(), "--results", kept.string()},
                                  std::chrono::seconds(180));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "alpha")) << result.output;
  const auto platform = platforms::read_platform_file(out);
  EXPECT_EQ(platform.name, "this-machine");
  EXPECT_EQ(platform.nodes.count, 4);
  EXPECT_GT(platform.network.link.latency_s, 0.0);
  EXPECT_LT(platform.network.link.latency_s, 1e-3);
  EXPECT_GT(platform.network.link.bandwidth_Bps, 1e7);
  // Measured from cold buffers, as training's exchanges start, and the sources say so.
  EXPECT_TRUE(contains(platform.network.link.sources.at("bandwidth_Bps"), "messages from cold buffers"))
      << platform.network.link.sources.at("bandwidth_Bps");
  EXPECT_NO_THROW(reports::read_results(kept));
  // The chip the 4 hosts share: timed alone as well as all busy (on a machine of more than one core), and the share
  // of a core a waiting MPI rank took while the others computed.
  if (platform.nodes.shared_chip) {
    const auto& chip = *platform.nodes.shared_chip;
    EXPECT_EQ(chip.nodes, 4);
    EXPECT_GE(chip.waiting_share, 0.0);
    EXPECT_LE(chip.waiting_share, 1.0);
    EXPECT_TRUE(contains(chip.sources.at("waiting_share"), "MPI ranks waited")) << chip.sources.at("waiting_share");
    EXPECT_FALSE(chip.alone.by_class.empty());
    // Measured beside cores - 1 computing ranks.
    ASSERT_TRUE(chip.loaded_link.has_value());
    EXPECT_GT(chip.loaded_link->bandwidth_Bps, 1e6);
    EXPECT_TRUE(contains(chip.loaded_link->sources.at("bandwidth_Bps"), "more rank"))
        << chip.loaded_link->sources.at("bandwidth_Bps");
  }
  fs::remove_all(out.parent_path());
}

TEST(MeasureMpiLaunch, PingpongBesideComputingRanksEnds) {
  // Ranks 2 and 3 compute until rank 0 tells them the ping-pong is over: the run must end, and say so.
  const auto file = scratch("busy-pingpong.json");
  const auto results = worker_results(4, {"pingpong", "--busy", "--max-bytes", "4096", "--rounds", "1"}, file);
  ASSERT_FALSE(results.benchmarks.empty());
  for (const auto& entry : results.benchmarks) {
    EXPECT_EQ(entry.counters.at("computing_ranks"), 2.0) << entry.name;
    EXPECT_GT(entry.counters.at("round_trip_s"), 0.0) << entry.name;
    // The mean lies between the fastest and the slowest sample.
    EXPECT_GE(entry.counters.at("round_trip_mean_s"), entry.counters.at("round_trip_min_s")) << entry.name;
    EXPECT_LE(entry.counters.at("round_trip_mean_s"), entry.counters.at("round_trip_max_s")) << entry.name;
  }
  fs::remove_all(file.parent_path());
}

TEST(MeasureMpiLaunch, PingpongAfterThinkingTimesOneRoundTripASample) {
  // Rank 0 computes 50 ms before each round trip while rank 1 waits: the samples time the round trips alone.
  const auto file = scratch("think-pingpong.json");
  const auto results = worker_results(
      2, {"pingpong", "--think", "0.05", "--min-bytes", "64", "--max-bytes", "128", "--rounds", "2"}, file);
  ASSERT_EQ(results.benchmarks.size(), 2U) << "64 and 128 bytes";
  for (const auto& entry : results.benchmarks) {
    EXPECT_EQ(entry.counters.at("think_s"), 0.05) << entry.name;
    EXPECT_EQ(entry.iterations, 2) << "one round trip in each of 2 rounds";
    // A sample that timed the thinking could not be shorter than it. The fastest sample is the robust witness: on a
    // loaded 2-core CI machine one round trip of two context switches has taken over 50 ms.
    EXPECT_LT(entry.counters.at("round_trip_min_s"), 0.05) << "the thinking is not timed";
  }
  expect_pingpong_refuses("--think", "-1", "--think must be >= 0");
  fs::remove_all(file.parent_path());
}

TEST(MeasureMpiLaunch, WaitingWritesTheShareOfACoreRankZeroTook) {
  const auto file = scratch("waiting.json");
  const auto result =
      run_process(mpirun_command(3, {kWorker, "waiting", "--seconds", "0.3", "--results", file.string()}),
                  std::chrono::seconds(60));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "while 2 ranks computed")) << result.output;
  const auto results = reports::read_results(file);
  ASSERT_EQ(results.benchmarks.size(), 1U);
  const auto& entry = results.benchmarks.front();
  EXPECT_EQ(entry.ranks, 3);
  // Rank 0's clock starts when it leaves the barrier, which may be a scheduling slice after the others started
  // computing (0.2965 s under ASan on 2 cores): most of the 0.3 s, not all of it.
  EXPECT_GE(entry.real_time, 0.25);
  EXPECT_GE(entry.counters.at("waiting_share"), 0.0);
  // CPU time over wall time of one process: its polling thread and Open MPI's progress threads may exceed one core
  // only by what they overlap, never by whole cores on this 2-core machine.
  EXPECT_LE(entry.counters.at("waiting_share"), 2.0);
  fs::remove_all(file.parent_path());
}

TEST(MeasureMpiLaunch, CalibrateReportsAFailedWorker) {
  const auto result =
      run_process({kDsgd, "calibrate", "--dsgd-mpi", "/nonexistent/dsgd-mpi", "--out", scratch("x.json").string()},
                  std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_TRUE(contains(result.output, "calibrate: the ping-pong failed")) << result.output;
  fs::remove_all(scratch("x.json").parent_path());
}

}  // namespace
}  // namespace dsgd::measure::mpi
