// simulate/collective_costs: each closed form equals the SimGrid executor's simulated time of the same collective
// on a flat alpha-beta star, within 1%. Each case prints its expectation beside the simulated value (SimGrid's
// tesh style).

#include "simulate/collective_costs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "platforms/catalog.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/test_names.hpp"

namespace dsgd::simulate {
namespace {

constexpr double kLatency = 1e-6;
constexpr double kBandwidth = 1e9;
constexpr double kNoGammaFlops = 1e20;  // reductions cost ~1e-20 s per float: gamma ~ 0
constexpr double kGammaFlops = 1e9;     // 1 ns per float added: the same order as beta per float (4 ns)
constexpr double kTolerance = 0.01;

// One collective: how a rank runs it (size only), and its closed form.
struct Collective {
  std::string name;
  std::function<void(Comm&, std::size_t count)> run;
  std::function<double(const AlphaBetaGamma&, int ranks, std::size_t count)> expected;
};

constexpr int kPushesPerWorker = 2;

// The compressed allreduces (core/compressed_collectives.hpp), 1-bit with three segments (segments() fills them).
std::vector<std::pair<std::string, CompressionOptions>> compressions() {
  return {{"fp16", compression_options(Compression::kFp16)},
          {"onebit", compression_options(Compression::kOneBit, 0.01, {1, 1, 1})},
          {"topk 0.01", compression_options(Compression::kTopK, 0.01)},
          {"topk 0.25", compression_options(Compression::kTopK, 0.25)}};
}

// `compression` with its segments (if any) cut from `count`: a third, a third and the rest.
CompressionOptions with_segments(CompressionOptions compression, std::size_t count) {
  if (compression.segments.empty()) return compression;
  compression.segments = {count / 3, count / 3, count - 2 * (count / 3)};
  return compression;
}

std::vector<Collective> collectives() {
  std::vector<Collective> all;
  all.push_back({"broadcast",
                 [](Comm& comm, std::size_t count) {
                   broadcast(comm, {nullptr, count}, 0);
                 },
                 broadcast_time});
  all.push_back({"reduce", [](Comm& comm, std::size_t count) { reduce(comm, {nullptr, count}, 0); }, reduce_time});
  for (const auto algorithm : kAllreduceAlgorithms) {
    all.push_back({"allreduce " + std::string(to_string(algorithm)),
                   [algorithm](Comm& comm, std::size_t count) {
                     allreduce(comm, {nullptr, count}, algorithm);
                   },
                   [algorithm](const AlphaBetaGamma& model, int ranks, std::size_t count) {
                     return allreduce_time(model, algorithm, ranks, count);
                   }});
  }
  for (const bool reply : {false, true}) {
    all.push_back({reply ? "round-robin gather with reply" : "round-robin gather",
                   [reply](Comm& comm, std::size_t count) {
                     round_robin_gather(comm, 0, {nullptr, count}, reply, [](int, std::span<const float>) {});
                   },
                   [reply](const AlphaBetaGamma& model, int ranks, std::size_t count) {
                     return round_robin_gather_time(model, ranks, count, reply);
                   }});
  }
  for (const auto& [label, compression] : compressions()) {
    all.push_back({"compressed " + label,
                   [compression](Comm& comm, std::size_t count) {
                     compressed_allreduce(comm, {nullptr, count}, {nullptr, count}, with_segments(compression, count));
                   },
                   [compression](const AlphaBetaGamma& model, int ranks, std::size_t count) {
                     return compressed_allreduce_time(model, with_segments(compression, count), ranks, count);
                   }});
  }
  all.push_back({"parameter server",
                 [](Comm& comm, std::size_t count) {
                   const auto requests = static_cast<std::size_t>(kPushesPerWorker * (comm.size() - 1));
                   if (comm.rank() == 0) {
                     serve_parameter_server(comm, count, requests,
                                            {[count](int, std::span<const float>) {
                                               return Floats{nullptr, count};
                                             },
                                             {}});
                   } else {
                     for (int push = 0; push < kPushesPerWorker; ++push) {
                       parameter_server_exchange(comm, 0, {nullptr, count}, {nullptr, count});
                     }
                   }
                 },
                 [](const AlphaBetaGamma& model, int ranks, std::size_t count) {
                   return parameter_server_time(model, count, count,
                                                static_cast<std::size_t>(kPushesPerWorker * (ranks - 1)));
                 }});
  return all;
}

double simulate(const Collective& collective, int ranks, std::size_t count, double flops) {
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  const auto result = simgrid::run(flat_platform(ranks, kLatency, kBandwidth, flops), world,
                                   [&](Comm& comm) { collective.run(comm, count); });
  return result.time_s;
}

struct Setting {
  double flops;
  std::vector<int> ranks;
};

class ClosedFormMatchesSimulation : public ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(ClosedFormMatchesSimulation, WithinOnePercent) {
  const auto [index, with_gamma] = GetParam();
  const Collective collective = collectives().at(index);
  const Setting setting = with_gamma ? Setting{kGammaFlops, {3, 8, 16}} : Setting{kNoGammaFlops, {2, 3, 4, 7, 8, 16}};
  const auto model = alpha_beta_gamma(flat_platform(2, kLatency, kBandwidth, setting.flops));
  for (const int ranks : setting.ranks) {
    for (const std::size_t count : {std::size_t{1001}, std::size_t{262144}}) {
      const double expected = collective.expected(model, ranks, count);
      const double simulated = simulate(collective, ranks, count, setting.flops);
      std::printf("%-30s %2d ranks %6zu floats%s: expected %.9g s, simulated %.9g s (%+.3f%%)\n",
                  collective.name.c_str(), ranks, count, with_gamma ? " gamma" : "", expected, simulated,
                  100 * (simulated - expected) / expected);
      EXPECT_NEAR(simulated, expected, kTolerance * expected)
          << collective.name << ", " << ranks << " ranks, " << count << " floats";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, ClosedFormMatchesSimulation,
                         ::testing::Combine(::testing::Range(std::size_t{0}, collectives().size()), ::testing::Bool()),
                         testing::collective_gamma_name(collectives));

// The sharded parameter server: S servers (ranks 0..S-1) and P workers in lockstep, each making kPushesPerWorker
// exchanges; a server's update costs `update_flops` per float of its shard before it replies.
double simulate_sharded_server(int servers, int workers, std::size_t count, double flops, double update_flops) {
  WorldOptions world;
  world.size = servers + workers;
  world.payload = false;
  const auto requests = static_cast<std::size_t>(kPushesPerWorker * workers);
  const auto body = [&](Comm& comm) {
    if (comm.rank() >= servers) {
      for (int push = 0; push < kPushesPerWorker; ++push) {
        sharded_parameter_server_exchange(comm, servers, {nullptr, count}, {nullptr, count});
      }
      return;
    }
    const Shard shard = shard_of(count, servers, comm.rank());
    serve_parameter_server(
        comm, shard.count, requests,
        {[&](int, std::span<const float>) {
           comm.compute({update_flops * static_cast<double>(shard.count), "elementwise", Category::kCpuUpdate, {}, 0});
           return Floats{nullptr, shard.count};
         },
         {}});
  };
  return simgrid::run(flat_platform(world.size, kLatency, kBandwidth, flops), world, body).time_s;
}

// Counts that every S here divides: equal shards keep the servers in lockstep, as the closed form assumes. With
// unequal shards the servers drift apart and may serve different workers at once, which only makes them faster: the
// closed form is then an upper bound (3 servers, 3 workers, 1001 floats: 12% below it).
TEST(CollectiveCosts, ShardedParameterServerMatchesItsClosedForm) {
  for (const double update_flops : {0.0, 4.0}) {
    const auto model = alpha_beta_gamma(flat_platform(2, kLatency, kBandwidth, kGammaFlops));
    for (const int servers : {1, 2, 3, 4}) {
      for (const int workers : {1, 3}) {
        for (const std::size_t count : {std::size_t{1001}, std::size_t{1008}, std::size_t{262152}}) {
          const auto requests = static_cast<std::size_t>(kPushesPerWorker * workers);
          const double expected = sharded_parameter_server_time(model, count, servers, requests, update_flops);
          const double simulated = simulate_sharded_server(servers, workers, count, kGammaFlops, update_flops);
          std::printf(
              "sharded server S=%d P=%d %6zu floats, update %g FLOP/float: expected %.9g s, simulated %.9g s "
              "(%+.3f%%)\n",
              servers, workers, count, update_flops, expected, simulated, 100 * (simulated - expected) / expected);
          if (count % static_cast<std::size_t>(servers) != 0) {
            EXPECT_LE(simulated, (1 + kTolerance) * expected) << servers << " servers, " << workers << " workers";
            continue;
          }
          EXPECT_NEAR(simulated, expected, kTolerance * expected)
              << servers << " servers, " << workers << " workers, " << count << " floats, update " << update_flops;
        }
      }
    }
  }
}

TEST(CollectiveCosts, OneRankCostsNothing) {
  const AlphaBetaGamma model{kLatency, kBandwidth, kGammaFlops};
  for (const auto& collective : collectives()) {
    EXPECT_EQ(collective.expected(model, 1, 1000), 0) << collective.name;
    EXPECT_EQ(simulate(collective, 1, 1000, kGammaFlops), 0) << collective.name;
  }
}

TEST(CollectiveCosts, TextbookValues) {
  const AlphaBetaGamma model{1e-6, 1e9, 1e9};
  const std::size_t count = 1 << 20;  // 4 MiB
  const double n = 4.0 * (1 << 20);
  const double c = 1 << 20;
  // Binomial trees: ceil(log2 P) rounds.
  EXPECT_DOUBLE_EQ(broadcast_time(model, 8, count), 3 * (1e-6 + n / 1e9));
  EXPECT_DOUBLE_EQ(broadcast_time(model, 9, count), 4 * (1e-6 + n / 1e9));
  EXPECT_DOUBLE_EQ(reduce_time(model, 5, count), 3 * (1e-6 + n / 1e9 + c / 1e9));
  // Ring: 2(P-1) alpha + 2 (P-1)/P n beta + (P-1)/P c gamma.
  EXPECT_NEAR(allreduce_time(model, AllreduceAlgorithm::kRing, 4, count), 6e-6 + 1.5 * n / 1e9 + 0.75 * c / 1e9, 1e-15);
  // Recursive doubling on 6 ranks: P' = 4, two steps, plus the fold in and out.
  EXPECT_NEAR(allreduce_time(model, AllreduceAlgorithm::kRecursiveDoubling, 6, count),
              2 * (1e-6 + n / 1e9 + c / 1e9) + 2 * (1e-6 + n / 1e9) + c / 1e9, 1e-15);
  // Rabenseifner on 8 ranks: 2 log2 P alpha + 2 (P-1)/P n beta + (P-1)/P c gamma.
  EXPECT_NEAR(allreduce_time(model, AllreduceAlgorithm::kRabenseifner, 8, count),
              6e-6 + 2 * 0.875 * n / 1e9 + 0.875 * c / 1e9, 1e-15);
  EXPECT_DOUBLE_EQ(allreduce_time(model, AllreduceAlgorithm::kReduceBroadcast, 8, count),
                   reduce_time(model, 8, count) + broadcast_time(model, 8, count));
  EXPECT_DOUBLE_EQ(round_robin_gather_time(model, 5, count, false), 4 * (1e-6 + n / 1e9));
  EXPECT_DOUBLE_EQ(round_robin_gather_time(model, 5, count, true), 8 * (1e-6 + n / 1e9));
  EXPECT_DOUBLE_EQ(parameter_server_time(model, count, 0, 3), 3 * (2e-6 + n / 1e9));
  // Sharded: the transfer as with one server; the update of the largest shard, 2^20 / 4 floats at 2 FLOPs each.
  EXPECT_DOUBLE_EQ(sharded_parameter_server_time(model, count, 4, 3, 2), 3 * (2e-6 + 2 * n / 1e9 + c / 2 / 1e9));
  EXPECT_THROW(sharded_parameter_server_time(model, count, 0, 3, 0), InputError);
  // Compressed, on 4 ranks: fp16 halves the ring's bytes and adds its conversions; onebit and topk allgather their
  // messages (c / 8 + 8 bytes of one segment's scales, and 8 bytes per kept entry).
  EXPECT_NEAR(compressed_allreduce_time(model, compression_options(Compression::kFp16), 4, count),
              c / 4 / 1e9 + 3 * (1e-6 + n / 8 / 1e9 + 3 * c / 4 / 1e9) + 3 * (1e-6 + n / 8 / 1e9) + c / 1e9, 1e-15);
  EXPECT_NEAR(compressed_allreduce_time(model, compression_options(Compression::kOneBit), 4, count),
              4 * c / 1e9 + 3 * (1e-6 + (c / 8 + 8) / 1e9) + 4 * c / 1e9, 1e-15);
  const double k = std::ceil(0.01 * c);
  EXPECT_NEAR(compressed_allreduce_time(model, compression_options(Compression::kTopK, 0.01), 4, count),
              3 * c / 1e9 + 3 * (1e-6 + 8 * k / 1e9) + (c + 4 * k) / 1e9, 1e-15);
  EXPECT_DOUBLE_EQ(compressed_allreduce_time(model, compression_options(Compression::kNone), 4, count),
                   allreduce_time(model, AllreduceAlgorithm::kRing, 4, count));
  EXPECT_THROW(broadcast_time(model, 0, count), InputError);
}

// Two nodes of 4 ranks, PCIe-like inside (no latency, 10 GB/s), a 1 GB/s network with 10 us between them, 1000
// floats; each term as collective_costs.hpp writes it.
TEST(CollectiveCosts, TwoLevelTextbookValues) {
  TwoLevelModel model;
  model.intra = {0, 10e9, 1e9};
  model.inter = {1e-5, 1e9, 1e9};
  model.nodes = 2;
  model.ranks_per_node = 4;
  // Reduce and broadcast in the node: 2 rounds of 4000 bytes (+ 1000 adds); a ring of the 2 leaders on halves.
  const double reduce_s = 2 * (4000 / 10e9 + 1000 / 1e9);
  const double leaders_s = 2 * (1e-5 + 2000 / 1e9) + 500 / 1e9;
  EXPECT_NEAR(two_level_allreduce_time(model, AllreduceAlgorithm::kHierarchical, 1000),
              reduce_s + leaders_s + 2 * (4000 / 10e9), 1e-15);
  // Rings in the node on quarters (3 steps of 1000 bytes each way, 250 adds), then 4 rings sharing the 1 GB/s link.
  const double node_s = 3 * (2 * (1000 / 10e9) + 250 / 1e9);
  const double lanes_s = 2 * (1e-5 + 500 / (1e9 / 4)) + 125 / 1e9;
  EXPECT_NEAR(two_level_allreduce_time(model, AllreduceAlgorithm::kHierarchical2d, 1000), node_s + lanes_s, 1e-15);
  // A flat ring over the 8 ranks: every step waits for a node-crossing pair.
  EXPECT_NEAR(two_level_allreduce_time(model, AllreduceAlgorithm::kRing, 1000),
              7 * (2 * (1e-5 + 500 / 1e9) + 125 / 1e9), 1e-15);
  EXPECT_THROW(two_level_allreduce_time(model, AllreduceAlgorithm::kRecursiveDoubling, 1000), InputError);
  // One rank per node: both hierarchical forms are the ring among the nodes.
  model.ranks_per_node = 1;
  model.nodes = 8;
  for (const auto algorithm : {AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kHierarchical2d}) {
    EXPECT_DOUBLE_EQ(two_level_allreduce_time(model, algorithm, 1000),
                     allreduce_time(model.inter, AllreduceAlgorithm::kRing, 8, 1000));
  }
}

TEST(CollectiveCosts, TwoLevelModelRefusesUnevenNodes) {
  const auto platform = platforms::load_platform(std::string(DSGD_TEST_DATA_DIR) + "/platforms/gpu8-10gbe.json");
  EXPECT_THROW(two_level_model(platform, 12, {}, 0), InputError);
  EXPECT_EQ(two_level_model(platform, 16, {}, 0).nodes, 2);
}

TEST(CollectiveCosts, ModelOfAPlatform) {
  auto platform = flat_platform(4, 2e-6, 1e10, 3e9);
  auto model = alpha_beta_gamma(platform);
  EXPECT_EQ(model.latency_s, 2e-6);
  EXPECT_EQ(model.bandwidth_Bps, 1e10);
  EXPECT_EQ(model.flops, 3e9);
  platform.network.topology.link_latency_s = 1e-7;
  platform.network.topology.link_bandwidth_Bps = 5e9;
  model = alpha_beta_gamma(platform);
  EXPECT_DOUBLE_EQ(model.latency_s, 2.1e-6);
  EXPECT_EQ(model.bandwidth_Bps, 5e9);
}

}  // namespace
}  // namespace dsgd::simulate
