// algorithms/dogwild.cpp: Dogwild's streaming. Over reliable messages (dogwild-reliable) with solvers stepping at
// eta / P, a replica adopts each master's segment with every slave's progress but its own one iteration late: with
// one or two workers that is sync-sgd's weights to rounding, with three a small, deterministic distance from them.
// Over datagrams (dogwild) the loss the run reports is measured: in SimGrid, which is deterministic, the receivers'
// sequence gaps are the datagrams the loss model dropped; over real UDP sockets under mpirun they are counted too,
// and training goes on through them. The catalog-wide tests (algorithms_test.cpp) train both on every executor.

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "measure/udp/udp_datagrams.hpp"
#include "reports/results.hpp"
#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms {
namespace {

using Dogwild = testing::TrainingRuns;

TEST_F(Dogwild, ReliableStreamingComputesSyncSgdsWeightsUpToTheOtherSlavesLastStep) {
  for (const int workers : {1, 2, 3}) {
    const auto sync = weights("sync-sgd", workers, 20, cli_.run.hyper);
    const auto streamed = weights("dogwild-reliable", workers, 20, cli_.run.hyper);
    ASSERT_EQ(streamed.size(), sync.size());
    const auto [difference, largest] = testing::largest_difference(streamed, sync);
    std::printf("%d workers, 20 iterations: largest difference from sync-sgd %.3g (largest weight %.3g)\n", workers,
                difference, largest);
    if (workers <= 2) {
      EXPECT_LE(difference, 1e-5 * largest) << workers << " workers: more than rounding apart";
    } else {
      // Slave 1 adopts segment 0 with slave 2's progress of the iteration before: close, not equal.
      EXPECT_GT(difference, 1e-5 * largest);
      EXPECT_LT(difference, 0.02 * largest);
    }
  }
}

// counters_text's "name=value" lines back.
std::map<std::string, double> parse_counters(const std::string& text) {
  std::map<std::string, double> counters;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) counters[line.substr(0, equals)] = std::stod(line.substr(equals + 1));
  }
  return counters;
}

// A run's weights' hash and counters, as text out of the simulation's process.
std::string counters_text(const RunResult& result) {
  std::string text = "hash " + testing::hex(result.parameters_hash) + "\n";
  for (const auto& [name, value] : result.counters) text += name + "=" + std::to_string(value) + "\n";
  return text;
}

TEST_F(Dogwild, SimulatedLossIsTheInjectedLossAndRepeats) {
  for (const double rate : {0.0, 0.2}) {
    auto cli = with("dogwild");
    cli.run.hyper.datagrams.loss_rate = rate;
    cli.run.hyper.chunk_floats = 2000;  // many datagrams per pass
    // A network faster than the streams (100 GB/s), so that few datagrams are still on their way at the end.
    const auto platform = simulate::flat_platform(3, 1e-6, 1e11, 1e12);
    const std::string first = run_simgrid(cli, /*payload=*/true, &platform, counters_text);
    EXPECT_EQ(run_simgrid(cli, /*payload=*/true, &platform, counters_text), first) << "a simulation repeats";
    const auto counters = parse_counters(first);
    const double injected = counters.at("datagrams_injected_drops");
    const double offered = counters.at("datagrams_sent") + injected;
    const double missing = counters.at("datagrams_missing");
    std::printf("loss %.2f: %.0f datagrams offered, %.0f dropped by the model, %.0f received, %.0f missing\n", rate,
                offered, injected, counters.at("datagrams_received"), missing);
    EXPECT_GT(counters.at("datagrams_received"), 1000);
    EXPECT_EQ(counters.at("datagrams_refused"), 0);
    EXPECT_EQ(counters.at("datagrams_duplicates"), 0);
    // The receivers see as gaps what the model dropped, but for drops after the last datagram that reached them
    // (some of the last pass's).
    EXPECT_LE(missing, injected);
    EXPECT_GE(missing, 0.95 * injected);
    EXPECT_NEAR(injected / offered, rate, 0.03);
  }
}

TEST_F(Dogwild, RealUdpSocketsUnderMpirunCountTheirLossAndLearn) {
  auto cli = with("dogwild");
  cli.run.hyper.datagrams.loss_rate = 0.1;
  cli.run.hyper.datagrams.receive_buffer_bytes = 16 << 20;  // fewer kernel drops when the ranks share 2 cores
  ASSERT_FALSE(run_mpi(cli).empty());
  const auto results = reports::read_results(dir_ / "dogwild.json");
  const auto& entry = results.benchmarks.at(0);
  const double measured = entry.counters.at("datagram_loss_measured");
  const double injected = entry.counters.at("datagrams_injected_drops");
  const double kernel = entry.counters.at("datagrams_receiver_drops");
  const double offered = entry.counters.at("datagrams_sent") + injected;
  std::printf(
      "3 ranks over UDP, 10%% injected: measured loss %.4f, %.0f of %.0f dropped by the model, %.0f by the kernel\n",
      measured, injected, offered, kernel);
  EXPECT_NEAR(injected / offered, 0.1, 0.03);
  // The gaps are the model's drops plus the kernel's (full socket buffers, as the ranks share the cores), less those
  // after the last datagram that arrived.
  EXPECT_GE(measured, injected / offered - 0.03);
  EXPECT_LE(measured, (injected + kernel) / offered + 0.03);
  EXPECT_GT(entry.counters.at("test_accuracy"), 0.5);
}

TEST_F(Dogwild, MulticastSendsEachChunkOnceForAllSlavesAndCountsItsLoss) {
  // 4 ranks for the same iterations: with multicast a master's pass is one send per chunk, not one per slave, so
  // fewer datagrams leave for about as many received; each member's drops are counted where they happen.
  std::map<std::string, std::map<std::string, double>> runs;
  for (const std::string algorithm : {"dogwild", "dogwild-multicast"}) {
    auto cli = with(algorithm);
    cli.run.workers = 4;
    cli.run.hyper.datagrams.loss_rate = 0.2;
    cli.run.hyper.chunk_floats = 2000;
    const auto platform = simulate::flat_platform(4, 1e-6, 1e11, 1e12);
    const std::string text = run_simgrid(cli, /*payload=*/true, &platform, counters_text);
    EXPECT_EQ(run_simgrid(cli, /*payload=*/true, &platform, counters_text), text) << algorithm << " repeats";
    runs[algorithm] = parse_counters(text);
    const auto& counters = runs[algorithm];
    std::printf("%s: %.0f datagrams sent, %.0f received, %.0f dropped by the model, %.0f missing\n", algorithm.c_str(),
                counters.at("datagrams_sent"), counters.at("datagrams_received"),
                counters.at("datagrams_injected_drops"), counters.at("datagrams_missing"));
    EXPECT_LE(counters.at("datagrams_missing"), counters.at("datagrams_injected_drops"));
    EXPECT_GE(counters.at("datagrams_missing"), 0.9 * counters.at("datagrams_injected_drops"));
    EXPECT_EQ(counters.at("datagrams_refused"), 0);
  }
  const auto& unicast = runs["dogwild"];
  const auto& multicast = runs["dogwild-multicast"];
  EXPECT_EQ(multicast.at("multicast_once_ranks"), 4);
  EXPECT_EQ(unicast.at("multicast_ranks"), 0);
  // Per datagram received, the unicast run sent about one; the multicast run's master chunks reach 3 slaves each.
  const double unicast_ratio = unicast.at("datagrams_sent") / unicast.at("datagrams_received");
  const double multicast_ratio = multicast.at("datagrams_sent") / multicast.at("datagrams_received");
  EXPECT_LT(multicast_ratio, 0.8 * unicast_ratio);
}

TEST_F(Dogwild, MulticastOverUdpUnderMpirunLearns) {
  auto cli = with("dogwild-multicast");
  cli.run.hyper.datagrams.receive_buffer_bytes = 16 << 20;
  ASSERT_FALSE(run_mpi(cli).empty());
  const auto results = reports::read_results(dir_ / "dogwild-multicast.json");
  const auto& entry = results.benchmarks.at(0);
  const bool ip = !measure::udp::multicast_on_loopback().has_value();
  std::printf("3 ranks, dogwild-multicast over UDP (%s): measured loss %.4f, accuracy %.4f\n",
              ip ? "ip multicast" : "emulated", entry.counters.at("datagram_loss_measured"),
              entry.counters.at("test_accuracy"));
  EXPECT_EQ(entry.counters.at("multicast_ranks"), 3);
  EXPECT_EQ(entry.counters.at("multicast_once_ranks"), ip ? 3 : 0);
  EXPECT_EQ(entry.counters.at("datagrams_duplicates"), 0);
  EXPECT_GT(entry.counters.at("test_accuracy"), 0.5);
}

TEST_F(Dogwild, RefusesALossRateOrChunkOutOfRange) {
  auto cli = with("dogwild");
  for (const double rate : {-0.1, 1.0}) {
    cli.run.hyper.datagrams.loss_rate = rate;
    EXPECT_THROW(check_run_options(cli.run), InputError) << rate;
  }
  cli.run.hyper.datagrams.loss_rate = 0;
  for (const std::size_t floats : {std::size_t{0}, kMaxChunkFloats + 1}) {
    cli.run.hyper.chunk_floats = floats;
    EXPECT_THROW(check_run_options(cli.run), InputError) << floats;
  }
}

}  // namespace
}  // namespace dsgd::algorithms
