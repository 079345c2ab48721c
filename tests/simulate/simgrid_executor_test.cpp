// simulate/simgrid: the SimGrid executor runs every collective exactly, in size-only mode at 4352 ranks, and turns
// every failure (a silent peer, a size mismatch, a bad rank, a deadlock, a crash) into a dsgd error.
//
// Each simgrid::run() forks a child (simulate/simgrid/executor.hpp): GoogleTest assertions inside a worker would
// fail in the child only, so workers throw (the checker of tests/core/collective_checks.hpp does) or report
// through SimulationOptions::collect.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/collectives.hpp"
#include "core/group_comm.hpp"
#include "simulate/collective_costs.hpp"
#include "simulate/compute_cost.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/core/collective_checks.hpp"
#include "tests/core/datagram_checks.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/shared_chip_platform.hpp"

namespace dsgd::simulate {
namespace {

constexpr double kLatency = 1e-6;
constexpr double kBandwidth = 1e9;
constexpr double kFlops = 1e12;

WorldOptions world_of(int size, bool payload = true) {
  WorldOptions world;
  world.size = size;
  world.payload = payload;
  return world;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// --- exact results --------------------------------------------------------------------------------------------

class SimgridCollectives : public ::testing::TestWithParam<std::tuple<int, std::size_t>> {};

TEST_P(SimgridCollectives, ExactResults) {
  const auto [ranks, count] = GetParam();
  const auto result = simgrid::run(flat_platform(ranks, kLatency, kBandwidth, kFlops), world_of(ranks),
                                   [count = count](Comm& comm) { testing::check_collectives(comm, count); });
  EXPECT_EQ(result.per_rank.size(), static_cast<std::size_t>(ranks));
  if (ranks > 1) {
    EXPECT_GT(result.time_s, 0);
  }
}

TEST_P(SimgridCollectives, SizeOnly) {
  const auto [ranks, count] = GetParam();
  const auto result = simgrid::run(flat_platform(ranks, kLatency, kBandwidth, kFlops), world_of(ranks, false),
                                   [count = count](Comm& comm) {
                                     if (comm.has_payload()) throw Error("size-only world with payloads");
                                     testing::check_collectives(comm, count);
                                   });
  EXPECT_EQ(result.per_rank.size(), static_cast<std::size_t>(ranks));
}

INSTANTIATE_TEST_SUITE_P(RanksAndSizes, SimgridCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7, 8, 16),
                                            ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{1001},
                                                              std::size_t{262144})),
                         [](const auto& param_info) {
                           return std::to_string(std::get<0>(param_info.param)) + "ranks_" +
                                  std::to_string(std::get<1>(param_info.param)) + "floats";
                         });

// Emulated nodes (WorldOptions::ranks_per_node), uneven ones included, under every collective.
TEST(SimgridCollectives, EmulatedNodesAreExact) {
  for (const auto& [ranks, per_node] : {std::pair{7, 3}, std::pair{16, 4}, std::pair{16, 5}}) {
    WorldOptions world = world_of(ranks);
    world.ranks_per_node = per_node;
    EXPECT_NO_THROW(simgrid::run(flat_platform(ranks, kLatency, kBandwidth, kFlops), world,
                                 [](Comm& comm) { testing::check_collectives(comm, 1001); }))
        << ranks << " ranks, " << per_node << " per node";
  }
}

// --- scale ----------------------------------------------------------------------------------------------------

// Message level and flow level (the default at this size) agree with the closed form.
class At4352Ranks : public ::testing::TestWithParam<Fidelity> {};

TEST_P(At4352Ranks, SizeOnlyReduceBroadcast) {
  constexpr int kRanks = 4352;
  constexpr std::size_t kCount = 262144;  // 1 MiB
  const auto platform = flat_platform(kRanks, kLatency, kBandwidth, kFlops);
  SimulationOptions options;
  options.fidelity = GetParam();
  const auto result = simgrid::run(
      platform, world_of(kRanks, false),
      [](Comm& comm) {
        const Floats buffer{nullptr, kCount};
        reduce(comm, buffer, 0);
        broadcast(comm, buffer, 0);
      },
      options);
  const auto model = alpha_beta_gamma(platform);
  const double expected = reduce_time(model, kRanks, kCount) + broadcast_time(model, kRanks, kCount);
  std::printf(
      "4352 ranks, reduce + broadcast of 1 MiB, %s fidelity: expected %.9g s, simulated %.9g s (wall %.3f s: setup "
      "%.3f, run %.3f)\n",
      std::string(to_string(result.fidelity)).c_str(), expected, result.time_s, result.wall_s, result.setup_wall_s,
      result.run_wall_s);
  EXPECT_NEAR(result.time_s, expected, expected * 0.01);
  EXPECT_EQ(result.fidelity, GetParam() == Fidelity::kAuto ? Fidelity::kFlow : GetParam());
  ASSERT_EQ(result.per_rank.size(), static_cast<std::size_t>(kRanks));
}

INSTANTIATE_TEST_SUITE_P(Fidelities, At4352Ranks, ::testing::Values(Fidelity::kAuto, Fidelity::kMessage),
                         [](const auto& param_info) { return std::string(to_string(param_info.param)); });

// --- failures -------------------------------------------------------------------------------------------------

TEST(SimgridExecutor, SilentPeerTimesOutNamingBothRanks) {
  const std::string message = testing::error_of<TimeoutError>([] {
    simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
      std::vector<float> buffer(1024);
      if (comm.rank() == 1) comm.recv(0, 7, buffer.data(), 4096, Category::kNetwork);
    });
  });
  EXPECT_TRUE(contains(message, "rank 1 waited 60 s for a message from rank 0 (tag 7, 4096 bytes)")) << message;
}

TEST(SimgridDatagrams, LoseExactlyTheInjectedOnes) {
  simgrid::run(flat_platform(3, kLatency, kBandwidth, kFlops), world_of(3),
               [](Comm& comm) { testing::check_datagrams_lose_exactly_the_injected(comm, 300); });
}

// The simulation runs in a child process: checks inside it throw, and the executor rethrows here.
void require(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error(what);
}

TEST(SimgridDatagrams, SizeOnlyCarryHeadersAtTheirFullSimulatedSize) {
  WorldOptions world = world_of(2);
  world.payload = false;
  simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
    const auto endpoint = comm.datagrams(DatagramOptions{});
    if (comm.rank() == 0) {
      for (int i = 0; i < 20; ++i) endpoint->send(1, 0, 0, 0, nullptr, 1000);
      return;
    }
    int received = 0;
    double last_s = 0;
    while (const auto chunk = endpoint->receive(1000, 1.0)) {
      require(chunk->floats.empty() && chunk->count == 1000, "a size-only chunk carried floats or lost its count");
      ++received;
      last_s = comm.now_s();
    }
    require(received == 20, "received " + std::to_string(received) + " of 20 datagrams");
    // 20 datagrams of 56 + 4000 bytes share the link: the last arrives after at least their transfer time.
    require(last_s >= 20 * (kDatagramOverheadBytes + 4000.0) / kBandwidth,
            "the last datagram arrived at " + std::to_string(last_s) + " s");
  });
}

TEST(SimgridDatagrams, AFullReceiverDropsTheRestAndTheLedgerSeesTheGaps) {
  simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
    DatagramOptions options;
    options.queue_datagrams = 5;
    const auto endpoint = comm.datagrams(options);
    const std::vector<float> floats(100, 1.0F);
    if (comm.rank() == 0) {
      for (int i = 0; i < 20; ++i) endpoint->send(1, 0, 0, 0, floats.data(), floats.size());
      comm.send(1, 1, nullptr, 0, Category::kNetwork);           // the burst is out
      comm.recv(1, 2, nullptr, 0, Category::kNetwork);           // rank 1 drained it
      endpoint->send(1, 0, 0, 0, floats.data(), floats.size());  // sequence 20 reveals the gaps
      return;
    }
    comm.recv(0, 1, nullptr, 0, Category::kNetwork);
    int received = 0;
    while (endpoint->receive(100, 1.0)) ++received;
    require(received == 5, "the full receiver held " + std::to_string(received) + " datagrams, not 5");
    comm.send(0, 2, nullptr, 0, Category::kNetwork);
    require(endpoint->receive(100, 1.0).has_value(), "sequence 20 did not arrive");
    require(endpoint->ledger().missing() == 15,
            "the ledger counts " + std::to_string(endpoint->ledger().missing()) + " gaps, not 15");
  });
}

TEST(SimgridDatagrams, UnreceivedOnesEndWithTheSimulation) {
  // Datagrams nobody receives neither block the senders nor outlive the simulation (ASan's leak check sees them).
  simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
    const auto endpoint = comm.datagrams(DatagramOptions{});
    const std::vector<float> floats(100, 1.0F);
    if (comm.rank() == 0) {
      for (int i = 0; i < 3; ++i) {
        require(endpoint->send(1, 0, 0, 0, floats.data(), floats.size()) == SendOutcome::kSent, "a send failed");
      }
    }
  });
}

TEST(SimgridDatagrams, AFullSendBufferRefusesWithoutAGap) {
  // A sender whose buffer holds 4 datagrams refuses the 5th to 10th sent at once (nothing sent, no sequence used);
  // once its buffer has drained it sends again, and the receiver sees sequences 0-4 with no gap.
  simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
    DatagramOptions options;
    options.send_buffer_bytes = 4 * (kDatagramOverheadBytes + 4000);
    const auto endpoint = comm.datagrams(options);
    const std::vector<float> floats(1000, 1.0F);
    if (comm.rank() == 0) {
      int sent = 0;
      for (int i = 0; i < 10; ++i) {
        sent += endpoint->send(1, 0, 0, 0, floats.data(), floats.size()) == SendOutcome::kSent ? 1 : 0;
      }
      require(sent == 4 && endpoint->send_refusals() == 6, "sent " + std::to_string(sent) + " of 10, not 4");
      comm.recv(1, 1, nullptr, 0, Category::kNetwork);  // the four have arrived
      require(endpoint->send(1, 0, 0, 0, floats.data(), floats.size()) == SendOutcome::kSent, "no room again");
      return;
    }
    for (int i = 0; i < 4; ++i) require(endpoint->receive(1000, 1.0).has_value(), "a datagram did not arrive");
    comm.send(0, 1, nullptr, 0, Category::kNetwork);
    const auto fifth = endpoint->receive(1000, 1.0);
    require(fifth.has_value() && fifth->header.sequence == 4, "the fifth datagram is not sequence 4");
    require(endpoint->ledger().missing() == 0, "refused datagrams left gaps");
  });
}

TEST(SimgridDatagrams, AGroupSendCostsOneTransferNotOnePerMember) {
  // Rank 0 sends 20 datagrams of 4056 bytes to its group of 4 and, after them, the same 20 to each member alone:
  // every member gets all 40; the group's take about one transfer each over rank 0's link, the unicast ones four.
  simgrid::run(flat_platform(5, kLatency, kBandwidth, kFlops), world_of(5), [](Comm& comm) {
    DatagramOptions options;
    options.send_buffer_bytes = 1 << 20;  // the 80 unicast datagrams at once
    const auto endpoint = comm.datagrams(options);
    const std::vector<float> floats(1000, 1.0F);
    constexpr double kTransfer_s = (kDatagramOverheadBytes + 4000.0) / kBandwidth;
    if (comm.rank() == 0) {
      require(endpoint->sends_group_once(), "a simulated group send is not one send");
      for (int i = 0; i < 20; ++i) endpoint->send_to_group(0, 0, 0, floats.data(), floats.size());
      for (int m = 1; m < 5; ++m) comm.recv(m, 1, nullptr, 0, Category::kNetwork);  // each member has them
      const double unicast_start_s = comm.now_s();
      for (int i = 0; i < 20; ++i) {
        for (int m = 1; m < 5; ++m) endpoint->send(m, 0, 0, 0, floats.data(), floats.size());
      }
      for (int m = 1; m < 5; ++m) comm.recv(m, 1, nullptr, 0, Category::kNetwork);
      const double unicast_s = comm.now_s() - unicast_start_s;
      std::printf("20 datagrams to 4 members: unicast %.3g s, %.1f transfers each\n", unicast_s,
                  unicast_s / (20 * kTransfer_s));
      require(unicast_s > 3.5 * 20 * kTransfer_s, "unicast took " + std::to_string(unicast_s) + " s");
      return;
    }
    int group = 0;
    while (group < 20) {
      const auto chunk = endpoint->receive(1000, 1.0);
      require(chunk.has_value() && chunk->header.group, "a group datagram did not arrive");
      ++group;
    }
    const double group_s = comm.now_s();
    std::printf("member %d: 20 group datagrams by %.3g s, %.2f transfers each\n", comm.rank(), group_s,
                group_s / (20 * kTransfer_s));
    // Each: one transfer, the route's latency and the copy's (rank 0's link, then the member's: 2 latencies each).
    require(group_s < 20 * (kTransfer_s + 4 * kLatency),
            "the group's datagrams took " + std::to_string(group_s) + " s");
    comm.send(0, 1, nullptr, 0, Category::kNetwork);
    for (int i = 0; i < 20; ++i) require(endpoint->receive(1000, 1.0).has_value(), "a unicast datagram is missing");
    comm.send(0, 1, nullptr, 0, Category::kNetwork);
    require(endpoint->ledger().missing() == 0, "gaps between a source's group and unicast sequences");
  });
}

TEST(SimgridExecutor, UnreceivedSendTimesOut) {
  WorldOptions world = world_of(2);
  world.timeout_s = 5;
  const std::string message = testing::error_of<TimeoutError>([&world] {
    simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
      if (comm.rank() == 0) comm.send(1, 3, nullptr, 0, Category::kNetwork);
    });
  });
  EXPECT_TRUE(contains(message, "rank 0 waited 5 s for rank 1 to receive its message (tag 3, 0 bytes)")) << message;
}

TEST(SimgridExecutor, CaughtTimeoutLeavesTheCommUsable) {
  WorldOptions world = world_of(2);
  world.timeout_s = 1;
  const auto result = simgrid::run(flat_platform(2, kLatency, kBandwidth, 1e9), world, [](Comm& comm) {
    float value = 3;
    if (comm.rank() == 0) {
      ComputeStep step;
      step.flops = 1.5e9;  // 1.5 s: rank 1's first receive gives up after 1 s
      comm.compute(step);
      comm.send(1, 1, &value, sizeof value, Category::kNetwork);
    } else {
      bool timed_out = false;
      try {
        comm.recv(0, 1, &value, sizeof value, Category::kNetwork);
      } catch (const TimeoutError&) {
        timed_out = true;
      }
      value = 0;
      comm.recv(0, 1, &value, sizeof value, Category::kNetwork);
      if (!timed_out || value != 3)
        throw Error("timed out: " + std::to_string(timed_out) + ", value " + std::to_string(value));
    }
  });
  EXPECT_NEAR(result.time_s, 1.5 + kLatency + 4 / kBandwidth, 1e-12);
}

// Work started beside the rank's next steps runs in the wait for it, in the waiting thread: no OS thread per call;
// a group's member starts it as its parent does.
TEST(SimgridExecutor, WorkStartedBesideRunsWhenWaitedFor) {
  simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& world) {
    GroupComm group(world, {0, 1});
    Comm& comm = world.rank() == 0 ? static_cast<Comm&>(group) : world;
    std::thread::id ran_on;
    auto beside = comm.start_beside([&ran_on] { ran_on = std::this_thread::get_id(); });
    float value = 1;
    if (comm.rank() == 0) comm.send(1, 1, &value, sizeof value, Category::kNetwork);
    if (comm.rank() == 1) comm.recv(0, 1, &value, sizeof value, Category::kNetwork);
    if (ran_on != std::thread::id()) throw Error("the work ran before its wait");
    beside.get();
    if (ran_on != std::this_thread::get_id()) throw Error("the work ran on another thread");
    auto failing = comm.start_beside([] { throw InputError("bad batch"); });
    try {
      failing.get();
    } catch (const InputError&) {
      return;
    }
    throw Error("the work's error was not rethrown by get()");
  });
}

TEST(SimgridExecutor, SizeMismatchIsCommErrorNamingBothSizes) {
  try {
    simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
      std::vector<float> buffer(1024);
      if (comm.rank() == 0) comm.send(1, 7, buffer.data(), 1024, Category::kNetwork);
      if (comm.rank() == 1) comm.recv(0, 7, buffer.data(), 4096, Category::kNetwork);
    });
    FAIL() << "no error";
  } catch (const TimeoutError& error) {
    FAIL() << "a size mismatch timed out: " << error.what();
  } catch (const CommError& error) {
    // The same wording as the threads and MPI executors (core/comm.hpp size_mismatch_text).
    EXPECT_STREQ(error.what(), "rank 1 expected 4096 bytes from rank 0 (tag 7) but the message has 1024 bytes");
  }
}

TEST(SimgridExecutor, RankOutOfRangeIsCommError) {
  for (const int peer : {2, -5}) {
    try {
      simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [peer](Comm& comm) {
        if (comm.rank() == 0) comm.send(peer, 0, nullptr, 0, Category::kNetwork);
      });
      FAIL() << "no error for rank " << peer;
    } catch (const TimeoutError& error) {
      FAIL() << "rank " << peer << " timed out: " << error.what();
    } catch (const CommError& error) {
      EXPECT_TRUE(contains(error.what(), "out of range [0, 2)")) << error.what();
    }
  }
  EXPECT_THROW(simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                            [](Comm& comm) { comm.recv(3, 0, nullptr, 0, Category::kNetwork); }),
               CommError);
}

TEST(SimgridExecutor, DeadlockWithoutTimeoutIsCommErrorNamingWhoWaitsForWhom) {
  WorldOptions world = world_of(2);
  world.timeout_s = std::numeric_limits<double>::infinity();
  try {
    simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
      float value = 0;
      comm.recv(1 - comm.rank(), 9, &value, sizeof value, Category::kNetwork);
    });
    FAIL() << "no error";
  } catch (const TimeoutError& error) {
    FAIL() << "an infinite timeout timed out: " << error.what();
  } catch (const CommError& error) {
    EXPECT_TRUE(contains(error.what(), "deadlock")) << error.what();
    EXPECT_TRUE(contains(error.what(), "rank 0 waits for a message from rank 1 (tag 9, 4 bytes)")) << error.what();
    EXPECT_TRUE(contains(error.what(), "rank 1 waits for a message from rank 0 (tag 9, 4 bytes)")) << error.what();
  }
}

TEST(SimgridExecutor, FirstErrorWinsAndOthersStop) {
  // Rank 1 fails at once; ranks 0 and 2 would wait 60 simulated seconds for it. Only rank 1's error comes back.
  try {
    simgrid::run(flat_platform(3, kLatency, kBandwidth, kFlops), world_of(3), [](Comm& comm) {
      if (comm.rank() == 1) throw std::runtime_error("boom");
      comm.recv(1, 0, nullptr, 0, Category::kNetwork);
    });
    FAIL() << "no error";
  } catch (const CommError& error) {
    FAIL() << "the others' timeout came back instead: " << error.what();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "rank 1: boom");
  }
}

TEST(SimgridExecutor, DsgdErrorsKeepTheirClass) {
  EXPECT_THROW(simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                            [](Comm&) { throw InputError("bad input"); }),
               InputError);
  EXPECT_THROW(simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                            [](Comm&) { throw UnavailableError("no gpu"); }),
               UnavailableError);
}

TEST(SimgridExecutor, CrashOfTheSimulationProcessIsInternalError) {
  try {
    simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
      if (comm.rank() == 1) std::raise(SIGKILL);
    });
    FAIL() << "no error";
  } catch (const InternalError& error) {
    EXPECT_TRUE(contains(error.what(), "died of signal 9")) << error.what();
  }
}

TEST(SimgridExecutor, WallTimeoutStopsAWorkerThatNeverBlocks) {
  SimulationOptions options;
  options.wall_timeout_s = 0.5;
  EXPECT_THROW(simgrid::run(
                   flat_platform(1, kLatency, kBandwidth, kFlops), world_of(1),
                   [](Comm&) {
                     volatile bool forever = true;
                     while (forever) {
                     }
                   },
                   options),
               TimeoutError);
}

TEST(SimgridExecutor, RefusesBadRequestsBeforeStarting) {
  const auto platform = flat_platform(2, kLatency, kBandwidth, kFlops);
  const WorkerFunction nothing = [](Comm&) {};
  EXPECT_THROW(simgrid::run(platform, world_of(3), nothing), InputError);
  EXPECT_THROW(simgrid::run(platform, world_of(0), nothing), InputError);
  WorldOptions no_time = world_of(2);
  no_time.timeout_s = 0;
  EXPECT_THROW(simgrid::run(platform, no_time, nothing), InputError);
  SimulationOptions options;
  options.network_model = "CM03";
  try {
    simgrid::run(platform, world_of(2), nothing, options);
    FAIL() << "unknown network model accepted";
  } catch (const UnknownNameError& error) {
    EXPECT_TRUE(contains(error.what(), "CM02")) << error.what();
  }
}

// --- time, breakdown, compute, shared vectors ------------------------------------------------------------------

TEST(SimgridExecutor, ComputeAdvancesTheClockAndRunsKernelsOnlyWithPayloads) {
  const auto platform = flat_platform(2, kLatency, kBandwidth, 1e9);
  for (const bool payload : {true, false}) {
    bool ran = false;
    SimulationOptions options;
    options.collect = [&ran] { return std::string(ran ? "ran" : "skipped"); };
    const auto result = simgrid::run(
        platform, world_of(2, payload),
        [&ran](Comm& comm) {
          ComputeStep step;
          step.flops = 2e9;  // 2 s at 1 GFLOP/s
          step.category = Category::kForwardBackward;
          step.kernel = [&ran] { ran = true; };
          comm.compute(step);
          if (comm.now_s() != 2.0) throw Error("clock at " + std::to_string(comm.now_s()) + " s after 2e9 flops");
        },
        options);
    EXPECT_DOUBLE_EQ(result.time_s, 2.0);
    EXPECT_DOUBLE_EQ(result.per_rank[1][Category::kForwardBackward], 2.0);
    EXPECT_EQ(result.collected, payload ? "ran" : "skipped");
    EXPECT_FALSE(ran);  // the kernel ran in the simulation's process, not here
  }
}

TEST(SimgridExecutor, BreakdownChargesSimulatedTimeToCategories) {
  const auto result = simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2, false), [](Comm& comm) {
    if (comm.rank() == 0) comm.send(1, 0, nullptr, 1000, Category::kCpuGpuPara);
    if (comm.rank() == 1) comm.recv(0, 0, nullptr, 1000, Category::kCpuGpuPara);
  });
  const double expected = kLatency + 1000 / kBandwidth;
  for (const auto& breakdown : result.per_rank) {
    EXPECT_NEAR(breakdown[Category::kCpuGpuPara], expected, 1e-15);
    EXPECT_NEAR(breakdown.total(), expected, 1e-15);
  }
}

TEST(SimgridExecutor, MessagesOfOneSourceAndTagDoNotOvertake) {
  // Rank 0 sends a large then a small message with the same tag; a receive for any source posted before them gets
  // the large one first. Rank 2's message to the same (destination, tag) is taken by the specific receive for it.
  SimulationOptions options;
  std::string order;
  options.collect = [&order] { return order; };
  const auto result = simgrid::run(
      flat_platform(3, kLatency, kBandwidth, kFlops), world_of(3),
      [&order](Comm& comm) {
        std::vector<float> big(100000, 1.0F);
        float small = 2;
        if (comm.rank() == 0) {
          auto first = comm.isend(1, 5, big.data(), big.size() * sizeof(float), Category::kNetwork);
          auto second = comm.isend(1, 5, &small, sizeof small, Category::kNetwork);
          first->wait();
          second->wait();
        } else if (comm.rank() == 2) {
          comm.send(1, 5, &small, sizeof small, Category::kNetwork);
        } else {
          float from_two = 0;
          auto two = comm.irecv(2, 5, &from_two, sizeof from_two, Category::kNetwork);
          std::vector<float> got(100000);
          const Status first = comm.recv(0, 5, got.data(), got.size() * sizeof(float), Category::kNetwork);
          float last = 0;
          const Status second = comm.recv(kAnySource, 5, &last, sizeof last, Category::kNetwork);
          two->wait();
          order = std::to_string(first.bytes) + "," + std::to_string(second.source) + ":" + std::to_string(last) + "," +
                  std::to_string(from_two);
        }
      },
      options);
  EXPECT_EQ(result.collected, "400000,0:2.000000,2.000000");
}

TEST(SimgridExecutor, SharedVectorStartsAsRankZerosAndChargesMemoryTime) {
  auto platform = flat_platform(4, kLatency, kBandwidth, kFlops);
  platforms::Memory memory;
  memory.name = "ddr";
  memory.bandwidth_Bps = 4e9;
  platform.nodes.memories.push_back(memory);
  std::string seen;
  SimulationOptions options;
  options.collect = [&seen] { return seen; };
  const auto result = simgrid::run(
      platform, world_of(4),
      [&seen](Comm& comm) {
        const std::vector<float> initial = {10, 20, 30};
        auto vector =
            comm.shared_vector("w", 3, comm.rank() == 0 ? std::span<const float>(initial) : std::span<const float>());
        const std::vector<float> delta = {1, 1, 1};
        vector->add(0, delta, static_cast<float>(comm.rank() + 1), Category::kCpuUpdate);  // 3 floats: 24 bytes moved
        comm.shared_vector("barrier", 0, {});
        if (comm.rank() == 0) {
          std::vector<float> out(3);
          vector->read(0, out, Category::kCpuUpdate);  // 12 bytes
          seen = std::to_string(out[0]) + "," + std::to_string(out[2]);
        }
      },
      options);
  EXPECT_EQ(result.collected, "20.000000,40.000000");  // 10 + (1 + 2 + 3 + 4)
  EXPECT_NEAR(result.per_rank[0][Category::kCpuUpdate], 36 / 4e9, 1e-18);
  EXPECT_NEAR(result.per_rank[1][Category::kCpuUpdate], 24 / 4e9, 1e-18);
}

TEST(SimgridExecutor, SharedVectorOutOfRangeIsCommError) {
  EXPECT_THROW(simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                            [](Comm& comm) {
                              auto vector = comm.shared_vector("w", 3, {});
                              std::vector<float> out(2);
                              vector->read(2, out, Category::kCpuUpdate);
                            }),
               CommError);
}

TEST(SimgridExecutor, InProcessRunsOnceThenRefuses) {
  // In a forked death-test child, so that this test process keeps its right to fork simulations.
  EXPECT_EXIT(
      {
        SimulationOptions options;
        options.isolate = false;
        int ran = 0;
        const auto result = simgrid::run(
            flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
            [&ran](Comm& comm) {
              if (comm.rank() == 0) comm.send(1, 0, nullptr, 0, Category::kNetwork);
              if (comm.rank() == 1) comm.recv(0, 0, nullptr, 0, Category::kNetwork);
              ++ran;
            },
            options);
        bool refused = false;
        try {
          simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm&) {});
        } catch (const UnavailableError&) {
          refused = true;
        }
        std::_Exit(ran == 2 && std::abs(result.time_s - kLatency) < 1e-15 && refused ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// --- shared chips ---------------------------------------------------------------------------------------------

// Ranks on one shared chip (tests/support/shared_chip_platform.hpp: conv takes kBusyS with every core busy, kAloneS
// alone) compute at a pace re-computed whenever a step of the chip starts or ends. The expectations are the fluid
// answers worked out by hand.

// When a compute step began and ended, in simulated seconds.
struct Span {
  double begin_s = 0;
  double end_s = 0;
};

// A rank's body; `compute` computes testing::conv_step() and records its span.
using ChipBody = std::function<void(Comm&, const std::function<void()>& compute)>;

struct ChipRun {
  SimulationResult result;
  std::vector<std::vector<Span>> steps;  // per rank, in order

  const Span& span(int rank, std::size_t step = 0) const { return steps.at(static_cast<std::size_t>(rank)).at(step); }
};

// Runs `body` on every rank of a size-only world at message fidelity; the spans come back through collect.
ChipRun run_on_chip(const platforms::Platform& platform, int ranks, const ChipBody& body) {
  ChipRun run;
  run.steps.resize(static_cast<std::size_t>(ranks));
  auto& steps = run.steps;
  SimulationOptions options;
  options.fidelity = Fidelity::kMessage;
  options.collect = [&steps] {
    std::string text;
    for (const auto& spans : steps) {
      text += std::to_string(spans.size());
      for (const auto& span : spans) {
        char pair[80];
        std::snprintf(pair, sizeof pair, " %.17g %.17g", span.begin_s, span.end_s);
        text += pair;
      }
      text += '\n';
    }
    return text;
  };
  run.result = simgrid::run(
      platform, world_of(ranks, false),
      [&steps, &body](Comm& comm) {
        auto& spans = steps[static_cast<std::size_t>(comm.rank())];
        body(comm, [&comm, &spans] {
          Span span;
          span.begin_s = comm.now_s();
          comm.compute(testing::conv_step());
          span.end_s = comm.now_s();
          spans.push_back(span);
        });
      },
      options);
  // Here, in the parent, `steps` is still empty: the workers filled the forked child's copy.
  std::istringstream in(run.result.collected);
  for (auto& spans : steps) {
    std::size_t count = 0;
    in >> count;
    spans.resize(count);
    for (auto& span : spans) in >> span.begin_s >> span.end_s;
  }
  if (!in) ADD_FAILURE() << "unreadable spans: " << run.result.collected;
  return run;
}

// The fluid model on its own, for steps of one class on one chip (platforms::SharedChip) that begin at `begins_s`
// (the chip's `ranks` ranks run at most one at a time each): between two events (a step beginning or ending) every
// running step advances at 1 / (alone + (busy - alone) x (min(k, cores) - 1) / (cores - 1), x k / cores beyond the
// cores), k = running steps + share x the ranks not running one. Returns each step's end.
std::vector<double> fluid_ends(const std::vector<double>& begins_s, int ranks, int cores, double share) {
  const double alone = testing::kAloneS;
  const double busy = testing::kBusyS;
  const std::size_t steps = begins_s.size();
  std::vector<double> left(steps, 1.0);
  std::vector<double> ends(steps, -1);
  double now = *std::min_element(begins_s.begin(), begins_s.end());
  for (std::size_t ended = 0; ended < steps;) {
    std::vector<std::size_t> running;
    for (std::size_t i = 0; i < steps; ++i) {
      if (begins_s[i] <= now && ends[i] < 0) running.push_back(i);
    }
    const auto computing = static_cast<double>(running.size());
    const double load = computing + share * (ranks - computing);
    const double busy_cores = std::min(load, static_cast<double>(cores));
    double seconds = cores == 1 ? busy : alone + (busy - alone) * (busy_cores - 1) / (cores - 1);
    if (load > cores) seconds *= load / cores;
    double next = std::numeric_limits<double>::infinity();
    for (const std::size_t i : running) next = std::min(next, now + left[i] * seconds);
    for (std::size_t i = 0; i < steps; ++i) {
      if (begins_s[i] > now) next = std::min(next, begins_s[i]);
    }
    for (const std::size_t i : running) {
      left[i] -= (next - now) / seconds;
      if (left[i] <= 1e-12) {
        ends[i] = next;
        ++ended;
      }
    }
    now = next;
  }
  return ends;
}

// Relative tolerance of the fluid answers: SimGrid's clock is exact to far better than this, a wrong pace is not.
constexpr double kChipTolerance = 1e-9;

void expect_span(const Span& span, double begin_s, double end_s) {
  EXPECT_NEAR(span.begin_s, begin_s, kChipTolerance * std::max(1.0, begin_s)) << "expectation: begins at " << begin_s;
  EXPECT_NEAR(span.end_s, end_s, kChipTolerance * end_s) << "expectation: ends at " << end_s;
}

TEST(SimgridSharedChip, RanksComputingTogetherTakeTheBusyTime) {
  const auto run = run_on_chip(testing::shared_chip_platform(2, 2, 2), 2,
                               [](Comm&, const std::function<void()>& compute) { compute(); });
  // Rank 0 starts alone (at the alone pace) and is re-paced at once when rank 1 starts at the same instant.
  expect_span(run.span(0), 0, testing::kBusyS);
  expect_span(run.span(1), 0, testing::kBusyS);
  EXPECT_NEAR(run.result.time_s, testing::kBusyS, kChipTolerance * testing::kBusyS);
  EXPECT_NEAR(run.result.per_rank[1][Category::kForwardBackward], testing::kBusyS, kChipTolerance * testing::kBusyS);
}

TEST(SimgridSharedChip, ARankComputingWhileTheOtherIdlesTakesTheAloneTime) {
  // The other rank waits in a receive the computing one answers afterwards.
  const auto waiting =
      run_on_chip(testing::shared_chip_platform(2, 2, 2), 2, [](Comm& comm, const std::function<void()>& compute) {
        if (comm.rank() == 0) {
          compute();
          comm.send(1, 0, nullptr, 0, Category::kNetwork);
        } else {
          comm.recv(0, 0, nullptr, 0, Category::kNetwork);
        }
      });
  expect_span(waiting.span(0), 0, testing::kAloneS);
  EXPECT_NEAR(waiting.result.time_s, testing::kAloneS + kLatency, kChipTolerance * testing::kAloneS);
  // The other rank does nothing at all.
  const auto idle =
      run_on_chip(testing::shared_chip_platform(2, 2, 2), 2, [](Comm& comm, const std::function<void()>& compute) {
        if (comm.rank() == 1) compute();
      });
  expect_span(idle.span(1), 0, testing::kAloneS);
}

TEST(SimgridSharedChip, AStepStartingHalfwayRepacesTheRunningOne) {
  // Rank 0 starts computing at 0 while its message to rank 1 is in flight; rank 1 starts when the message
  // arrives, at t1 = latency + bytes / bandwidth = 0.8 s, half of rank 0's step at the alone pace. Fluid answer:
  //   rank 0: half its step alone until t1, the other half busy: ends at e0 = t1 + (1 - t1 / alone) x busy = 1.8 s;
  //   rank 1: (e0 - t1) / busy of its step busy, the rest, t1 / alone of it, alone again: ends at e0 + t1 = 2.6 s.
  // A pace fixed when a step starts would end rank 0 at 1.6 s; one not re-computed at rank 0's end, rank 1 at 2.8 s.
  const double t1 = testing::kAloneS / 2;
  const auto bytes = static_cast<std::size_t>((t1 - kLatency) * kBandwidth + 0.5);
  const auto run =
      run_on_chip(testing::shared_chip_platform(2, 2, 2), 2, [bytes](Comm& comm, const std::function<void()>& compute) {
        if (comm.rank() == 0) {
          auto message = comm.isend(1, 0, nullptr, bytes, Category::kNetwork);
          compute();
          message->wait();
        } else {
          comm.recv(0, 0, nullptr, bytes, Category::kNetwork);
          compute();
        }
      });
  const double start_1 = run.span(1).begin_s;  // the message's simulated arrival
  EXPECT_NEAR(start_1, t1, 1e-9) << "expectation: rank 1 starts half way through rank 0's step alone";
  const double end_0 = start_1 + (1 - start_1 / testing::kAloneS) * testing::kBusyS;
  const double end_1 = end_0 + start_1;
  std::printf("staggered steps: rank 0 ends at %.9f s (expectation %.9f), rank 1 at %.9f s (expectation %.9f)\n",
              run.span(0).end_s, end_0, run.span(1).end_s, end_1);
  expect_span(run.span(0), 0, end_0);
  expect_span(run.span(1), start_1, end_1);
  EXPECT_NEAR(end_0, 1.8, 1e-9);
  EXPECT_NEAR(end_1, 2.6, 1e-9);
}

TEST(SimgridSharedChip, TheFluidReferenceGivesTheHandAnswer) {
  // The reference of the next test, on the staggered case above.
  const auto ends = fluid_ends({0, 0.8}, 2, 2, 0);
  EXPECT_NEAR(ends[0], 1.8, 1e-12);
  EXPECT_NEAR(ends[1], 2.6, 1e-12);
}

TEST(SimgridSharedChip, ManyStaggeredStepsFollowTheFluidModel) {
  // Four ranks on a chip of 2 cores, waiting share 0.25, two steps each, begun at times set by messages: rank 0
  // starts ranks 1-3 by messages of different sizes (sharing its link), rank 3 waits between its steps for rank 1.
  // Loads from 1.75 (one step running) to 4 (all four) occur; every end must be the fluid model's.
  constexpr int kRanks = 4;
  constexpr double kShare = 0.25;
  const std::vector<std::size_t> bytes = {0, 300000000, 500000000, 900000000};
  const auto run = run_on_chip(testing::shared_chip_platform(kRanks, kRanks, 2, kShare), kRanks,
                               [&bytes](Comm& comm, const std::function<void()>& compute) {
                                 const int rank = comm.rank();
                                 if (rank == 0) {
                                   std::vector<RequestPtr> starts;
                                   for (int peer = 1; peer < kRanks; ++peer) {
                                     starts.push_back(comm.isend(peer, 0, nullptr, bytes[peer], Category::kNetwork));
                                   }
                                   compute();
                                   compute();
                                   for (auto& start : starts) start->wait();
                                   return;
                                 }
                                 comm.recv(0, 0, nullptr, bytes[static_cast<std::size_t>(rank)], Category::kNetwork);
                                 compute();
                                 if (rank == 1) comm.send(3, 1, nullptr, 0, Category::kNetwork);
                                 if (rank == 3) comm.recv(1, 1, nullptr, 0, Category::kNetwork);
                                 compute();
                               });
  std::vector<double> begins;
  std::vector<double> ends;
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(run.steps[static_cast<std::size_t>(rank)].size(), 2U) << "rank " << rank;
    for (const auto& span : run.steps[static_cast<std::size_t>(rank)]) {
      begins.push_back(span.begin_s);
      ends.push_back(span.end_s);
    }
  }
  const auto expected = fluid_ends(begins, kRanks, 2, kShare);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    std::printf("rank %zu step %zu: %.9f .. %.9f s (%.9f s), expectation end %.9f s\n", i / 2, i % 2, begins[i],
                ends[i], ends[i] - begins[i], expected[i]);
    EXPECT_NEAR(ends[i], expected[i], kChipTolerance * expected[i]) << "rank " << i / 2 << " step " << i % 2;
  }
  // Not a degenerate schedule: the steps end far apart.
  const auto [shortest, longest] = std::minmax_element(ends.begin(), ends.end());
  EXPECT_GT(*longest - *shortest, 0.5);
}

TEST(SimgridSharedChip, ThreeRanksOnTwoCoresTakeTurns) {
  const auto run = run_on_chip(testing::shared_chip_platform(3, 3, 2), 3,
                               [](Comm&, const std::function<void()>& compute) { compute(); });
  for (int rank = 0; rank < 3; ++rank) expect_span(run.span(rank), 0, 1.5 * testing::kBusyS);  // load 3 on 2 cores
}

TEST(SimgridSharedChip, AWaitingRankTakesItsShareOfACore) {
  // Ranks 0 and 1 compute while rank 2 waits for rank 0's message: load 2 + 0.5 x 1 = 2.5 on 2 cores, so each
  // step takes busy x 2.5 / 2 = 2.5 s (2 s if waiting ranks took nothing, 3 s if they counted as computing).
  const auto run =
      run_on_chip(testing::shared_chip_platform(3, 3, 2, 0.5), 3, [](Comm& comm, const std::function<void()>& compute) {
        if (comm.rank() == 2) {
          comm.recv(0, 0, nullptr, 0, Category::kNetwork);
          return;
        }
        compute();
        if (comm.rank() == 0) comm.send(2, 0, nullptr, 0, Category::kNetwork);
      });
  expect_span(run.span(0), 0, 1.25 * testing::kBusyS);
  expect_span(run.span(1), 0, 1.25 * testing::kBusyS);
}

// A chip of 3 ranks on `cores` cores whose loaded link is far slower than its network link (1 us, 1 GB/s).
platforms::Platform chip_with_loaded_link(int cores) {
  auto platform = testing::shared_chip_platform(3, 3, cores);
  platforms::Link loaded;
  loaded.name = "loaded";
  loaded.latency_s = 1e-3;
  loaded.bandwidth_Bps = 1e8;
  loaded.sources["latency_s"] = "test";
  loaded.sources["bandwidth_Bps"] = "test";
  platform.nodes.shared_chip->loaded_link = loaded;
  return platform;
}

TEST(SimgridSharedChip, AMessageBesideComputingRanksCostsTheLoadedLink) {
  // Rank 1 sends to rank 2 at time 0, while rank 0 computes (its step registered first: actors start in rank
  // order) or does nothing. On 2 cores the computing rank leaves the pair a single core: the loaded link. With 3
  // cores, or nobody computing, the network link.
  constexpr std::size_t kBytes = 10000000;
  const auto body = [](bool compute_beside) {
    return [compute_beside](Comm& comm, const std::function<void()>& compute) {
      if (comm.rank() == 0 && compute_beside) compute();
      if (comm.rank() == 1) comm.send(2, 0, nullptr, kBytes, Category::kNetwork);
      if (comm.rank() == 2) comm.recv(1, 0, nullptr, kBytes, Category::kNetwork);
    };
  };
  const double loaded_s = 1e-3 + static_cast<double>(kBytes) / 1e8;
  const double network_s = testing::kChipLatency_s + static_cast<double>(kBytes) / testing::kChipBandwidth_Bps;
  const auto received_s = [&](int cores, bool compute_beside) {
    return run_on_chip(chip_with_loaded_link(cores), 3, body(compute_beside)).result.per_rank[2][Category::kNetwork];
  };
  EXPECT_NEAR(received_s(2, true), loaded_s, 1e-9);
  EXPECT_NEAR(received_s(2, false), network_s, 1e-9);
  EXPECT_NEAR(received_s(3, true), network_s, 1e-9);
  // Without a loaded link: the network link beside computing ranks too.
  auto plain = chip_with_loaded_link(2);
  plain.nodes.shared_chip->loaded_link.reset();
  EXPECT_NEAR(run_on_chip(plain, 3, body(true)).result.per_rank[2][Category::kNetwork], network_s, 1e-9);
}

TEST(SimgridSharedChip, ChipsDoNotLoadEachOther) {
  // Two chips of two nodes: ranks 0 and 2 compute on different chips, their neighbours idle.
  const auto run =
      run_on_chip(testing::shared_chip_platform(4, 2, 2), 4, [](Comm& comm, const std::function<void()>& compute) {
        if (comm.rank() % 2 == 0) compute();
      });
  expect_span(run.span(0), 0, testing::kAloneS);
  expect_span(run.span(2), 0, testing::kAloneS);
}

TEST(SimgridSharedChip, WithoutASharedChipComputeIsAsBefore) {
  auto platform = testing::shared_chip_platform(2, 2, 2);
  platform.nodes.shared_chip.reset();
  const double expected = compute_seconds(place_ranks(platform, 2)[0], testing::conv_step());
  ASSERT_DOUBLE_EQ(expected, testing::kBusyS);
  // Together, and one rank alone: the busy efficiency either way.
  const auto together = run_on_chip(platform, 2, [](Comm&, const std::function<void()>& compute) { compute(); });
  expect_span(together.span(0), 0, expected);
  expect_span(together.span(1), 0, expected);
  const auto alone = run_on_chip(platform, 2, [](Comm& comm, const std::function<void()>& compute) {
    if (comm.rank() == 0) compute();
  });
  expect_span(alone.span(0), 0, expected);
}

TEST(SimgridSharedChip, AFailureWhileAChipComputesIsReported) {
  // Rank 1 throws while rank 0's step runs on their chip: rank 0 is killed out of its wait on the chip, and only
  // rank 1's error comes back.
  try {
    run_on_chip(testing::shared_chip_platform(2, 2, 2), 2, [](Comm& comm, const std::function<void()>& compute) {
      if (comm.rank() == 0) compute();
      if (comm.rank() == 1) throw std::runtime_error("boom");
    });
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "rank 1: boom");
  }
}

// --- streams (Comm::start_stream): a second actor of the rank ------------------------------------------------

TEST(SimgridStream, SumsExactlyAtEveryFidelity) {
  for (const int ranks : {1, 2, 3, 8}) {
    for (const bool payload : {true, false}) {
      for (const Fidelity fidelity : {Fidelity::kMessage, Fidelity::kFlow}) {
        if (payload && fidelity == Fidelity::kFlow) continue;  // flows carry sizes only
        SimulationOptions options;
        options.fidelity = fidelity;
        EXPECT_NO_THROW(simgrid::run(
            flat_platform(ranks, kLatency, kBandwidth, kFlops), world_of(ranks, payload),
            [](Comm& comm) { testing::check_stream(comm, 1001, 3); }, options))
            << ranks << " ranks, payload " << payload;
      }
    }
  }
}

// Rank 0's join wait and its stream's communication time, as "joined stream".
std::string stream_times(double message_bytes) {
  SimulationOptions options;
  StreamResult joined;
  options.collect = [&joined] {
    return std::to_string(joined.joined_s) + " " + std::to_string(joined.stream[Category::kGpuGpuPara]);
  };
  const auto result = simgrid::run(
      flat_platform(2, 0, kBandwidth, 1e9), world_of(2, false),
      [&joined, message_bytes](Comm& comm) {
        StreamPtr stream = comm.start_stream([message_bytes](Comm& own, StreamPosts& posts) {
          posts.take();
          const auto bytes = static_cast<std::size_t>(message_bytes);
          auto receive = own.irecv(1 - own.rank(), 5, nullptr, bytes, Category::kGpuGpuPara);
          own.send(1 - own.rank(), 5, nullptr, bytes, Category::kGpuGpuPara);
          receive->wait();
        });
        stream->post();
        ComputeStep step;
        step.flops = 1e9;  // 1 s at 1 GFLOP/s
        comm.compute(step);
        const StreamResult stream_result = stream->join(Category::kGpuGpuPara);
        if (comm.rank() == 0) joined = stream_result;
      },
      options);
  return result.collected + " " + std::to_string(result.time_s);
}

TEST(SimgridStream, ItsMessagesOverlapTheCallersCompute) {
  // A 0.5 s exchange hides under a 1 s compute step; a 1.5 s one leaves 0.5 s for the caller to wait.
  // Expectation: "joined_s stream_s time_s".
  EXPECT_EQ(stream_times(0.5e9), "0.000000 0.500000 1.000000");
  EXPECT_EQ(stream_times(1.5e9), "0.500000 1.500000 1.500000");
}

TEST(SimgridStream, DeadlockReportNamesTheStream) {
  WorldOptions world = world_of(2);
  world.timeout_s = std::numeric_limits<double>::infinity();
  try {
    simgrid::run(flat_platform(2, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
      if (comm.rank() == 1) return;
      StreamPtr stream = comm.start_stream([](Comm& own, StreamPosts& posts) {
        posts.take();
        float value = 0;
        own.recv(1, 9, &value, sizeof value, Category::kGpuGpuPara);
      });
      stream->post();
      stream->join(Category::kGpuGpuPara);
    });
    FAIL() << "no error";
  } catch (const CommError& error) {
    EXPECT_TRUE(contains(error.what(), "rank 0 waits for its stream to end")) << error.what();
    EXPECT_TRUE(contains(error.what(), "rank 0's stream waits for a message from rank 1 (tag 9, 4 bytes)"))
        << error.what();
  }
}

TEST(SimgridStream, ACallerThatNeverPostsTimesOutNamingTheStream) {
  WorldOptions world = world_of(1);
  world.timeout_s = 2;
  try {
    simgrid::run(flat_platform(1, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
      StreamPtr stream = comm.start_stream([](Comm&, StreamPosts& posts) { posts.take(); });
      stream->join(Category::kGpuGpuPara);
    });
    FAIL() << "no error";
  } catch (const TimeoutError& error) {
    EXPECT_EQ(std::string(error.what()), "rank 0 waited 2 s in its stream for its caller to post work");
  }
}

}  // namespace
}  // namespace dsgd::simulate
