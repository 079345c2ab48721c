// simulate/simgrid: the SimGrid executor runs every collective exactly, in size-only mode at 4352 ranks, and turns
// every failure (a silent peer, a size mismatch, a bad rank, a deadlock, a crash) into a dsgd error.
//
// Each run_simulation() forks a child (simulate/simgrid/executor.hpp): GoogleTest assertions inside a worker would
// fail in the child only, so workers throw (the checker of tests/core/collective_checks.hpp does) or report
// through SimulationOptions::collect.

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/collectives.hpp"
#include "simulate/collective_costs.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/core/collective_checks.hpp"

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
  const auto result = run_simulation(flat_platform(ranks, kLatency, kBandwidth, kFlops), world_of(ranks),
                                     [count = count](Comm& comm) { testing::check_collectives(comm, count); });
  EXPECT_EQ(result.per_rank.size(), static_cast<std::size_t>(ranks));
  if (ranks > 1) {
    EXPECT_GT(result.simulated_s, 0);
  }
}

TEST_P(SimgridCollectives, SizeOnly) {
  const auto [ranks, count] = GetParam();
  const auto result = run_simulation(flat_platform(ranks, kLatency, kBandwidth, kFlops), world_of(ranks, false),
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

// --- scale ----------------------------------------------------------------------------------------------------

// Message level and flow level (the default at this size) agree with the closed form.
class At4352Ranks : public ::testing::TestWithParam<Fidelity> {};

TEST_P(At4352Ranks, SizeOnlyReduceBroadcast) {
  constexpr int kRanks = 4352;
  constexpr std::size_t kCount = 262144;  // 1 MiB
  const auto platform = flat_platform(kRanks, kLatency, kBandwidth, kFlops);
  SimulationOptions options;
  options.fidelity = GetParam();
  const auto result = run_simulation(
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
      std::string(to_string(result.fidelity)).c_str(), expected, result.simulated_s, result.wall_s,
      result.setup_wall_s, result.run_wall_s);
  EXPECT_NEAR(result.simulated_s, expected, expected * 0.01);
  EXPECT_EQ(result.fidelity, GetParam() == Fidelity::kAuto ? Fidelity::kFlow : GetParam());
  ASSERT_EQ(result.per_rank.size(), static_cast<std::size_t>(kRanks));
}

INSTANTIATE_TEST_SUITE_P(Fidelities, At4352Ranks, ::testing::Values(Fidelity::kAuto, Fidelity::kMessage),
                         [](const auto& param_info) { return std::string(to_string(param_info.param)); });

// --- failures -------------------------------------------------------------------------------------------------

TEST(SimgridExecutor, SilentPeerTimesOutNamingBothRanks) {
  try {
    run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
      std::vector<float> buffer(1024);
      if (comm.rank() == 1) comm.recv(0, 7, buffer.data(), 4096, Category::kNetwork);
    });
    FAIL() << "no error";
  } catch (const TimeoutError& error) {
    EXPECT_TRUE(contains(error.what(), "rank 1 waited 60 s for a message from rank 0 (tag 7, 4096 bytes)"))
        << error.what();
  }
}

TEST(SimgridExecutor, UnreceivedSendTimesOut) {
  WorldOptions world = world_of(2);
  world.timeout_s = 5;
  try {
    run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
      if (comm.rank() == 0) comm.send(1, 3, nullptr, 0, Category::kNetwork);
    });
    FAIL() << "no error";
  } catch (const TimeoutError& error) {
    EXPECT_TRUE(contains(error.what(), "rank 0 waited 5 s for rank 1 to receive its message (tag 3, 0 bytes)"))
        << error.what();
  }
}

TEST(SimgridExecutor, CaughtTimeoutLeavesTheCommUsable) {
  WorldOptions world = world_of(2);
  world.timeout_s = 1;
  const auto result = run_simulation(flat_platform(2, kLatency, kBandwidth, 1e9), world, [](Comm& comm) {
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
  EXPECT_NEAR(result.simulated_s, 1.5 + kLatency + 4 / kBandwidth, 1e-12);
}

TEST(SimgridExecutor, SizeMismatchIsCommErrorNamingBothSizes) {
  try {
    run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
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
      run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [peer](Comm& comm) {
        if (comm.rank() == 0) comm.send(peer, 0, nullptr, 0, Category::kNetwork);
      });
      FAIL() << "no error for rank " << peer;
    } catch (const TimeoutError& error) {
      FAIL() << "rank " << peer << " timed out: " << error.what();
    } catch (const CommError& error) {
      EXPECT_TRUE(contains(error.what(), "out of range [0, 2)")) << error.what();
    }
  }
  EXPECT_THROW(run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                              [](Comm& comm) { comm.recv(3, 0, nullptr, 0, Category::kNetwork); }),
               CommError);
}

TEST(SimgridExecutor, DeadlockWithoutTimeoutIsCommErrorNamingWhoWaitsForWhom) {
  WorldOptions world = world_of(2);
  world.timeout_s = std::numeric_limits<double>::infinity();
  try {
    run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world, [](Comm& comm) {
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
    run_simulation(flat_platform(3, kLatency, kBandwidth, kFlops), world_of(3), [](Comm& comm) {
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
  EXPECT_THROW(run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                              [](Comm&) { throw InputError("bad input"); }),
               InputError);
  EXPECT_THROW(run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
                              [](Comm&) { throw UnavailableError("no gpu"); }),
               UnavailableError);
}

TEST(SimgridExecutor, CrashOfTheSimulationProcessIsInternalError) {
  try {
    run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm& comm) {
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
  EXPECT_THROW(run_simulation(
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
  EXPECT_THROW(run_simulation(platform, world_of(3), nothing), InputError);
  EXPECT_THROW(run_simulation(platform, world_of(0), nothing), InputError);
  WorldOptions no_time = world_of(2);
  no_time.timeout_s = 0;
  EXPECT_THROW(run_simulation(platform, no_time, nothing), InputError);
  SimulationOptions options;
  options.network_model = "CM03";
  try {
    run_simulation(platform, world_of(2), nothing, options);
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
    const auto result = run_simulation(
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
    EXPECT_DOUBLE_EQ(result.simulated_s, 2.0);
    EXPECT_DOUBLE_EQ(result.per_rank[1][Category::kForwardBackward], 2.0);
    EXPECT_EQ(result.collected, payload ? "ran" : "skipped");
    EXPECT_FALSE(ran);  // the kernel ran in the simulation's process, not here
  }
}

TEST(SimgridExecutor, BreakdownChargesSimulatedTimeToCategories) {
  const auto result =
      run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2, false), [](Comm& comm) {
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
  const auto result = run_simulation(
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
  const auto result = run_simulation(
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
  EXPECT_THROW(run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
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
        const auto result = run_simulation(
            flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2),
            [&ran](Comm& comm) {
              if (comm.rank() == 0) comm.send(1, 0, nullptr, 0, Category::kNetwork);
              if (comm.rank() == 1) comm.recv(0, 0, nullptr, 0, Category::kNetwork);
              ++ran;
            },
            options);
        bool refused = false;
        try {
          run_simulation(flat_platform(2, kLatency, kBandwidth, kFlops), world_of(2), [](Comm&) {});
        } catch (const UnavailableError&) {
          refused = true;
        }
        std::_Exit(ran == 2 && std::abs(result.simulated_s - kLatency) < 1e-15 && refused ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace dsgd::simulate
