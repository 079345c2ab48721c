// simulate/simgrid/flows: flow fidelity gives the message level's times -- the total and every rank's time in the
// collective -- where they should agree (a synchronised start on a homogeneous platform), with link sharing
// through a backbone included; and it refuses what it cannot run.

#include "simulate/simgrid/flows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "core/compressed_collectives.hpp"
#include "platforms/catalog.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/test_names.hpp"

namespace dsgd::simulate {
namespace {

constexpr double kLatency = 1e-6;
constexpr double kBandwidth = 1e9;

struct Collective {
  std::string name;
  std::function<void(Comm&, std::size_t)> run;
};

std::vector<Collective> collectives() {
  std::vector<Collective> all = {
      {"broadcast",
       [](Comm& comm, std::size_t count) {
         broadcast(comm, {nullptr, count}, 0);
       }},
      {"reduce to 2",
       [](Comm& comm, std::size_t count) {
         reduce(comm, {nullptr, count}, comm.size() > 2 ? 2 : 0);
       }},
  };
  for (const auto algorithm : kAllreduceAlgorithms) {
    all.push_back({"allreduce " + std::string(to_string(algorithm)), [algorithm](Comm& comm, std::size_t count) {
                     allreduce(comm, {nullptr, count}, algorithm);
                   }});
  }
  for (const CompressionOptions& compression :
       {compression_options(Compression::kFp16), compression_options(Compression::kOneBit),
        compression_options(Compression::kTopK, 0.01)}) {
    all.push_back(
        {"compressed " + std::string(to_string(compression.kind)), [compression](Comm& comm, std::size_t count) {
           compressed_allreduce(comm, {nullptr, count}, {nullptr, count}, compression);
         }});
  }
  return all;
}

SimulationResult simulate(const platforms::Platform& platform, int ranks, Fidelity fidelity,
                          const std::function<void(Comm&)>& worker, double timeout_s = 60) {
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  world.timeout_s = timeout_s;
  SimulationOptions options;
  options.fidelity = fidelity;
  const auto result = simgrid::run(platform, world, worker, options);
  EXPECT_EQ(result.fidelity, fidelity);
  return result;
}

// `worker` on 3 ranks of a flat star at flow fidelity.
SimulationResult simulate_three_ranks(const std::function<void(Comm&)>& worker, double timeout_s = 60) {
  return simulate(flat_platform(3, kLatency, kBandwidth, 1e12), 3, Fidelity::kFlow, worker, timeout_s);
}

// Equal totals and, with `per_rank`, equal per-rank category times, within 1e-4 of the total plus `slack_s`. An
// uneven split (1001 floats over 8 ranks) makes the activities of one step differ by a float: the flow level's
// synchronised steps then move a rank's time by up to a float's transfer per step, which `slack_s` allows.
void expect_same_times(const SimulationResult& message, const SimulationResult& flow, const std::string& what,
                       bool per_rank = true, double slack_s = 0) {
  const double tolerance = 1e-4 * message.time_s + slack_s;
  EXPECT_NEAR(flow.time_s, message.time_s, tolerance) << what;
  ASSERT_EQ(flow.per_rank.size(), message.per_rank.size());
  if (!per_rank) return;
  for (std::size_t rank = 0; rank < message.per_rank.size(); ++rank) {
    EXPECT_NEAR(flow.per_rank[rank].total(), message.per_rank[rank].total(), tolerance) << what << ", rank " << rank;
    EXPECT_NEAR(flow.per_rank[rank][Category::kGpuGpuPara], message.per_rank[rank][Category::kGpuGpuPara], tolerance)
        << what << ", rank " << rank;
  }
}

class FlowMatchesMessage : public ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(FlowMatchesMessage, OnAFlatStar) {
  const auto [index, with_gamma] = GetParam();
  const Collective collective = collectives().at(index);
  const double flops = with_gamma ? 1e9 : 1e12;
  for (const int ranks : {1, 2, 3, 7, 8, 16}) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1001}, std::size_t{262144}}) {
      const auto platform = flat_platform(ranks, kLatency, kBandwidth, flops);
      const auto worker = [&](Comm& comm) { collective.run(comm, count); };
      const auto message = simulate(platform, ranks, Fidelity::kMessage, worker);
      const auto flow = simulate(platform, ranks, Fidelity::kFlow, worker);
      std::printf("%-30s %2d ranks %6zu floats%s: message %.9g s, flow %.9g s\n", collective.name.c_str(), ranks, count,
                  with_gamma ? " gamma" : "", message.time_s, flow.time_s);
      const double float_per_step_s = 2.0 * ranks * (sizeof(float) / kBandwidth + 1.0 / flops);
      expect_same_times(message, flow,
                        collective.name + ", " + std::to_string(ranks) + " ranks, " + std::to_string(count) + " floats",
                        /*per_rank=*/true, float_per_step_s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, FlowMatchesMessage,
                         ::testing::Combine(::testing::Range(std::size_t{0}, collectives().size()), ::testing::Bool()),
                         testing::collective_gamma_name(collectives));

TEST(FlowFidelity, SharedBackboneKeepsEveryFlow) {
  // Every message crosses one backbone slower than the node links: the flows of a step share it, so none may be
  // folded into a representative.
  for (const int ranks : {4, 8, 13}) {
    auto platform = flat_platform(ranks, kLatency, kBandwidth, 1e12);
    platform.network.topology.link_bandwidth_Bps = 2.5e9;
    platform.network.topology.link_latency_s = 1e-7;
    for (const auto& collective : collectives()) {
      const auto worker = [&](Comm& comm) { collective.run(comm, 262144); };
      const auto message = simulate(platform, ranks, Fidelity::kMessage, worker);
      const auto flow = simulate(platform, ranks, Fidelity::kFlow, worker);
      std::printf("backbone %-22s %2d ranks: message %.9g s, flow %.9g s\n", collective.name.c_str(), ranks,
                  message.time_s, flow.time_s);
      // On 13 ranks the binomial trees are irregular: there the message level lets a leaf's send to an inner node
      // cross the network as soon as that node posts a receive for another child on the same tag (SimGrid matches
      // per mailbox; the message is kept as unexpected), while the flow level starts it when its own receive is
      // posted, as MPI's rendezvous protocol does. Leaves then leave at different times; the totals still agree.
      expect_same_times(message, flow, "backbone, " + collective.name + ", " + std::to_string(ranks) + " ranks",
                        /*per_rank=*/ranks != 13);
    }
  }
}

TEST(FlowFidelity, FlowsMeetingOnlyAtAFatpipeAreFolded) {
  // p100-roce-25g's GPUs reach each other and the NIC through their node's root complex, a FATPIPE link (each flow
  // gets its whole bandwidth): a ring's flows meet there but do not contend, so the plan folds them into a few
  // representatives (1533 steps of 512 transfers at 512 GPUs: 3 flows a step, not 86). Flow and message level
  // must still agree, for the ring and for the hierarchical allreduces that cross the node's PCIe tree: in total (a
  // step's transfers within a node are faster than those between nodes, so at the message level a rank leaves as
  // soon as its own last transfer ended, and the flow level's steps are barriers: docs/simulation.md).
  const auto platform = platforms::catalog_platform("p100-roce-25g");
  for (const auto algorithm :
       {AllreduceAlgorithm::kRing, AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kHierarchical2d}) {
    const auto worker = [&](Comm& comm) { allreduce(comm, {nullptr, 262144}, algorithm); };
    const auto message = simulate(platform, 16, Fidelity::kMessage, worker);
    const auto flow = simulate(platform, 16, Fidelity::kFlow, worker);
    std::printf("p100-roce-25g %-18s 16 ranks: message %.9g s, flow %.9g s\n", to_string(algorithm).data(),
                message.time_s, flow.time_s);
    expect_same_times(message, flow, "p100-roce-25g, " + std::string(to_string(algorithm)), /*per_rank=*/false);
  }
}

TEST(FlowFidelity, AlikeGroupsSimulatedOnceGiveEveryActivitysTimes) {
  // One rank per core of 3 KNL meshes on the dragonfly: a step's transfers inside one chip share its mesh links and
  // memory controllers, those between chips the nodes' links. Groups alike across chips are simulated once; every
  // rank's time must equal the simulation of every activity. A grouping that missed a shared link would let
  // contending flows stand for one another and move these times.
  const auto platform = platforms::catalog_platform("cori-knl");
  const int ranks = 3 * 68;
  for (const auto& collective : collectives()) {
    const auto worker = [&](Comm& comm) { collective.run(comm, 65536); };
    std::vector<SimulationResult> runs;
    for (const bool replicate : {true, false}) {
      WorldOptions world;
      world.size = ranks;
      world.payload = false;
      world.timeout_s = 60;
      SimulationOptions options;
      options.fidelity = Fidelity::kFlow;
      options.flow_replicas = replicate;
      runs.push_back(simgrid::run(platform, world, worker, options));
    }
    std::printf("3 KNL meshes %-22s: %.9g s with alike groups once, %.9g s with every activity\n",
                collective.name.c_str(), runs[0].time_s, runs[1].time_s);
    expect_same_times(runs[1], runs[0], "3 KNL meshes, " + collective.name);
  }
}

TEST(FlowFidelity, CountsEveryRanksBytesAsTheMessageLevel) {
  // Comm::bytes_sent: the message level counts each isend, the flow level each rank's transfers of the schedule.
  for (const auto& collective : collectives()) {
    for (const int ranks : {3, 8}) {
      const auto bytes_at = [&](Fidelity fidelity) {
        std::vector<std::uint64_t> bytes(static_cast<std::size_t>(ranks), 0);
        WorldOptions world;
        world.size = ranks;
        world.payload = false;
        SimulationOptions options;
        options.fidelity = fidelity;
        options.collect = [&bytes] {
          std::string text;
          for (const auto sent : bytes) text += std::to_string(sent) + " ";
          return text;
        };
        return simgrid::run(
                   flat_platform(ranks, kLatency, kBandwidth, 1e12), world,
                   [&](Comm& comm) {
                     collective.run(comm, 1001);
                     bytes[static_cast<std::size_t>(comm.rank())] = comm.bytes_sent();
                   },
                   options)
            .collected;
      };
      const std::string message = bytes_at(Fidelity::kMessage);
      EXPECT_EQ(bytes_at(Fidelity::kFlow), message) << collective.name << ", " << ranks << " ranks";
      EXPECT_NE(message.substr(0, 2), "0 ") << collective.name << ": rank 0 sent nothing";
    }
  }
}

TEST(FlowFidelity, LaterJoinerDelaysTheCollective) {
  // Rank 1 computes 1 ms before joining: the collective starts when it joins, and ends 1 ms later than without.
  const auto platform = flat_platform(4, kLatency, kBandwidth, 1e9);
  const auto run = [&](double delay_flops) {
    return simulate(platform, 4, Fidelity::kFlow, [delay_flops](Comm& comm) {
      if (comm.rank() == 1) comm.compute({delay_flops, "gemm", Category::kForwardBackward, {}});
      broadcast(comm, {nullptr, 1000}, 0);
    });
  };
  EXPECT_NEAR(run(1e6).time_s - run(0).time_s, 1e-3, 1e-12);
}

TEST(FlowFidelity, NonCollectiveMessagesStayMessages) {
  const auto result = simulate_three_ranks([](Comm& comm) {
    if (comm.rank() == 0) {
      serve_parameter_server(comm, 100, 2, {[](int, std::span<const float>) { return Floats{nullptr, 100}; }, {}});
    } else {
      parameter_server_exchange(comm, 0, {nullptr, 100}, {nullptr, 100});
    }
    allreduce(comm, {nullptr, 100}, AllreduceAlgorithm::kRecursiveDoubling);
  });
  EXPECT_GT(result.time_s, 0);
}

TEST(FlowFidelity, DifferentCollectivesInOnePositionIsCommError) {
  const std::string message = testing::error_of<CommError>([] {
    simulate_three_ranks([](Comm& comm) {
      if (comm.rank() == 2) {
        reduce(comm, {nullptr, 10}, 0);
      } else {
        broadcast(comm, {nullptr, 10}, 0);
      }
    });
  });
  EXPECT_NE(message.find("called collective #0 as"), std::string::npos) << message;
  EXPECT_NE(message.find("broadcast (count 10, root 0"), std::string::npos) << message;
  EXPECT_NE(message.find("reduce (count 10, root 0"), std::string::npos) << message;
}

TEST(FlowFidelity, RankThatNeverJoinsTimesOut) {
  const std::string message = testing::error_of<TimeoutError>([] {
    simulate_three_ranks(
        [](Comm& comm) {
          if (comm.rank() != 1) broadcast(comm, {nullptr, 10}, 0);
        },
        /*timeout_s=*/0.5);
  });
  EXPECT_NE(message.find("rank 0 waited 0.5 s for collective broadcast (count 10"), std::string::npos) << message;
  EXPECT_NE(message.find("(2 of 3 ranks joined; rank 1 did not)"), std::string::npos) << message;
}

TEST(FlowFidelity, DeadlockWithoutTimeoutNamesTheCollective) {
  const std::string message = testing::error_of<CommError>([] {
    const auto worker = [](Comm& comm) {
      if (comm.rank() == 1) comm.recv(2, 5, nullptr, 4, Category::kNetwork);  // nobody sends it
      broadcast(comm, {nullptr, 10}, 0);
    };
    simulate_three_ranks(worker, std::numeric_limits<double>::infinity());
  });
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 0 waits for collective broadcast (count 10"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 waits for a message from rank 2 (tag 5, 4 bytes)"), std::string::npos) << message;
}

TEST(FlowFidelity, NeedsASizeOnlyWorld) {
  WorldOptions world;
  world.size = 2;
  world.payload = true;
  SimulationOptions options;
  options.fidelity = Fidelity::kFlow;
  EXPECT_THROW(simgrid::run(
                   flat_platform(2, kLatency, kBandwidth, 1e12), world, [](Comm&) {}, options),
               InputError);
}

TEST(FlowFidelity, AutoPicksFlowForLargeSizeOnlyWorlds) {
  WorldOptions world;
  world.payload = false;
  for (const auto& [ranks, expected] : {std::pair{4, Fidelity::kMessage}, std::pair{kFlowFromRanks, Fidelity::kFlow}}) {
    world.size = ranks;
    const auto result = simgrid::run(flat_platform(ranks, kLatency, kBandwidth, 1e12), world, [](Comm&) {});
    EXPECT_EQ(result.fidelity, expected) << ranks << " ranks";
  }
  world.size = kFlowFromRanks;
  world.payload = true;
  EXPECT_EQ(simgrid::run(flat_platform(kFlowFromRanks, kLatency, kBandwidth, 1e12), world, [](Comm&) {}).fidelity,
            Fidelity::kMessage);
}

TEST(FlowFidelity, FidelityNames) {
  for (const auto fidelity : {Fidelity::kAuto, Fidelity::kMessage, Fidelity::kFlow}) {
    EXPECT_EQ(fidelity_from_string(to_string(fidelity)), fidelity);
  }
  EXPECT_THROW(fidelity_from_string("packet"), UnknownNameError);
}

}  // namespace
}  // namespace dsgd::simulate
