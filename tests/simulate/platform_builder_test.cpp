// simulate/simgrid/platform_builder: a flat star costs alpha + n / bandwidth per message, and what is not simulated
// yet is refused.

#include "simulate/simgrid/platform_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "platforms/catalog.hpp"
#include "simulate/kernel_cost.hpp"
#include "simulate/simgrid/executor.hpp"
#include "tests/support/simulated_message.hpp"

namespace dsgd::simulate {
namespace {

constexpr double kLatency = 1e-6;
constexpr double kBandwidth = 1e9;

// Simulated seconds for rank 0 to send `bytes` to rank 1 (size only).
double one_message_s(const platforms::Platform& platform, std::size_t bytes) {
  return testing::simulated_message_s(platform, 2, 0, 1, bytes);
}

TEST(PlatformBuilder, FlatStarMessageCostsAlphaPlusBytesOverBandwidth) {
  const auto platform = flat_platform(2, kLatency, kBandwidth, 1e9);
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20, std::size_t{64} << 20}) {
    const double expected = kLatency + static_cast<double>(bytes) / kBandwidth;
    const double simulated = one_message_s(platform, bytes);
    std::printf("%9zu bytes: expected %.9g s, simulated %.9g s\n", bytes, expected, simulated);
    EXPECT_NEAR(simulated, expected, expected * 1e-9) << bytes << " bytes";
  }
}

TEST(PlatformBuilder, LongLatencyKeepsFullBandwidthWithoutTcpGamma) {
  // SimGrid's TCP window (4 MiB) would cap this 1 ms, 10 GB/s link at 2 GB/s.
  const auto platform = flat_platform(2, 1e-3, 1e10, 1e9);
  const double expected = 1e-3 + 1e8 / 1e10;
  const double simulated = one_message_s(platform, 100'000'000);
  std::printf("1e8 bytes at 1 ms, 10 GB/s: expected %.9g s, simulated %.9g s\n", expected, simulated);
  EXPECT_NEAR(simulated, expected, expected * 1e-9);
}

TEST(PlatformBuilder, BackboneAddsItsLatencyAndCapsBandwidth) {
  auto platform = flat_platform(2, kLatency, kBandwidth, 1e9);
  platform.network.topology.link_latency_s = 5e-7;
  platform.network.topology.link_bandwidth_Bps = 5e8;
  const double expected = kLatency + 5e-7 + (1 << 20) / 5e8;
  const double simulated = one_message_s(platform, 1 << 20);
  std::printf("backbone: expected %.9g s, simulated %.9g s\n", expected, simulated);
  EXPECT_NEAR(simulated, expected, expected * 1e-9);
}

// A piecewise link like a shared-memory MPI transport's: eager, rendezvous, in-cache (faster than the base link, so
// a bandwidth factor above 1), out-of-cache (a fit through the origin: latency 0).
platforms::Platform segmented_platform() {
  auto platform = flat_platform(2, kLatency, kBandwidth, 1e9);
  platform.network.link.segments = {
      {0, 2e-7, 3e9, {}}, {4044, 1.5e-6, 8e9, {}}, {65536, 3e-6, 12e9, {}}, {4194304, 0, 4e9, {}}};
  return platform;
}

TEST(PlatformBuilder, SegmentedLinkCostsItsSegmentsAlphaPlusBytesOverBandwidth) {
  const auto platform = segmented_platform();
  const auto& link = platform.network.link;
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{4043}, std::size_t{4044}, std::size_t{4045}, std::size_t{32768},
        std::size_t{65535}, std::size_t{65536}, std::size_t{1} << 20, std::size_t{4194303}, std::size_t{4194304},
        std::size_t{64} << 20}) {
    const auto* segment = link.segment_for(static_cast<double>(bytes));
    const double expected = segment->latency_s + static_cast<double>(bytes) / segment->bandwidth_Bps;
    const double simulated = one_message_s(platform, bytes);
    std::printf("%9zu bytes (segment from %7.0f B): expected %.9g s, simulated %.9g s\n", bytes, segment->min_bytes,
                expected, simulated);
    EXPECT_NEAR(simulated, expected, expected * 1e-9) << bytes << " bytes";
  }
}

TEST(PlatformBuilder, SegmentedLinkBehindABackbone) {
  // The backbone adds its latency to every segment's and caps every segment's bandwidth at its own.
  auto platform = segmented_platform();
  platform.network.topology.link_latency_s = 5e-7;
  platform.network.topology.link_bandwidth_Bps = 5e9;
  for (const std::size_t bytes : {std::size_t{1000}, std::size_t{8192}, std::size_t{1} << 20, std::size_t{8} << 20}) {
    const auto* segment = platform.network.link.segment_for(static_cast<double>(bytes));
    const double expected =
        segment->latency_s + 5e-7 + static_cast<double>(bytes) / std::min(segment->bandwidth_Bps, 5e9);
    const double simulated = one_message_s(platform, bytes);
    std::printf("backbone, %9zu bytes: expected %.9g s, simulated %.9g s\n", bytes, expected, simulated);
    EXPECT_NEAR(simulated, expected, expected * 1e-9) << bytes << " bytes";
  }
}

TEST(PlatformBuilder, SegmentsAreCheckedLikeTheLoaderChecksThem) {
  auto platform = segmented_platform();
  platform.network.link.segments[0].min_bytes = 8;
  EXPECT_THROW(check_simulatable(platform, 2), InputError);
  platform = segmented_platform();
  platform.network.link.segments[2].min_bytes = 4044;
  EXPECT_THROW(check_simulatable(platform, 2), InputError);
  platform = segmented_platform();
  platform.network.link.segments[1].bandwidth_Bps = 0;
  EXPECT_THROW(check_simulatable(platform, 2), InputError);
  platform = segmented_platform();
  platform.network.link.segments[1].latency_s = -1;
  EXPECT_THROW(check_simulatable(platform, 2), InputError);
}

// Simulated time of one empty message from rank `from` to rank `to`: the sum of the route's link latencies.
double empty_message_s(const platforms::Platform& platform, int ranks, int from, int to,
                       const PlacementOptions& placement = {}) {
  return testing::simulated_message_s(platform, ranks, from, to, 0, placement);
}

platforms::Platform knl(platforms::ClusterMode mode) {
  auto platform = platforms::catalog_platform("cori-knl");
  std::get<platforms::KnlMesh>(platform.nodes.intra_node).cluster_mode = mode;
  return platform;
}

TEST(PlatformBuilder, KnlMeshRoutesAreDimensionOrderedThroughAnMcdramController) {
  // cori-knl's schematic die: controllers take (0,0) (1,0) (4,0) (5,0) (0,3) (5,3) (0,7) (1,7) (4,7) (5,7); tiles
  // fill the other stops row-major, so core 0 (tile 0) sits at (2,0) and core 67 (tile 33) at (3,6).
  const auto quadrant = knl(platforms::ClusterMode::kQuadrant);
  const auto& mesh = std::get<platforms::KnlMesh>(quadrant.nodes.intra_node);
  EXPECT_EQ(rank_stop(quadrant, 0, 68), (MeshStop{2, 0}));
  EXPECT_EQ(rank_stop(quadrant, 67, 68), (MeshStop{3, 6}));
  const double hop_s = *mesh.hop_latency_s;
  // Quadrant: the controller nearest the sender, (1,0): 1 hop there, 2 + 6 hops on to (3,6).
  EXPECT_EQ(memory_controller(mesh, {2, 0}, {3, 6}), 1);
  EXPECT_EQ(xy_route({1, 0}, {3, 6}).size(), 8U);
  EXPECT_NEAR(empty_message_s(quadrant, 68, 0, 67), 9 * hop_s, 1e-15);
  // SNC-4: the receiver's quadrant's memory (bottom right: (4,7) or (5,7)); (4,7) is nearer: 2 + 7 hops, then 2.
  const auto snc4 = knl(platforms::ClusterMode::kSnc4);
  EXPECT_EQ(memory_controller(mesh, {2, 0}, {3, 6}), 1);
  EXPECT_EQ(memory_controller(std::get<platforms::KnlMesh>(snc4.nodes.intra_node), {2, 0}, {3, 6}), 6);
  EXPECT_NEAR(empty_message_s(snc4, 68, 0, 67), 11 * hop_s, 1e-15);
  // X first, then Y.
  const auto hops = xy_route({0, 0}, {2, 1});
  ASSERT_EQ(hops.size(), 3U);
  EXPECT_EQ(hops[1].to, (MeshStop{2, 0}));
  EXPECT_EQ(hops[2].to, (MeshStop{2, 1}));
}

TEST(PlatformBuilder, KnlCoreGroupsShareTheChip) {
  const auto platform = platforms::catalog_platform("cori-knl");
  PlacementOptions four;
  four.ranks_per_node = 4;
  const auto sites = place_ranks(platform, 8, four);
  EXPECT_EQ(sites[5].node, 1);
  EXPECT_EQ(sites[5].unit, "cores 17-33");
  EXPECT_NEAR(sites[5].peak_flops, platform.nodes.cpu.peak_flops / 4, 1);
  EXPECT_EQ(rank_capacity(platform), 68LL * platform.nodes.count);
  four.ranks_per_node = 69;
  EXPECT_THROW(check_simulatable(platform, 8, four), InputError);
}

TEST(PlatformBuilder, DragonflyHopCounts) {
  // One rank per node (core 0, one mesh hop from the NIC stop at each end); an empty message costs the node
  // link's alpha, two mesh hops and the fabric's links: node -> router and router -> node, plus one green link to
  // another router of the chassis, one black link to the same router of another chassis, and more to reach
  // another group (SimGrid wires the blue links to chassis 0's routers).
  const auto platform = platforms::catalog_platform("cori-knl");
  const double alpha = platform.network.link.latency_s;
  const double mesh_hop = *std::get<platforms::KnlMesh>(platform.nodes.intra_node).hop_latency_s;
  const double fabric_hop = *platform.network.topology.link_latency_s;
  PlacementOptions one;
  one.ranks_per_node = 1;
  const auto fabric_hops = [&](int to) {
    return (empty_message_s(platform, to + 1, 0, to, one) - alpha - 2 * mesh_hop) / fabric_hop;
  };
  EXPECT_NEAR(fabric_hops(1), 2, 1e-6);   // same router
  EXPECT_NEAR(fabric_hops(4), 3, 1e-6);   // same chassis
  EXPECT_NEAR(fabric_hops(64), 3, 1e-6);  // same group, another chassis
  EXPECT_GE(fabric_hops(384), 4 - 1e-6);  // another group
}

TEST(PlatformBuilder, DragonflyBeyondSimgridsWiringIsRefusedBeforeSimgridSeesIt) {
  // Cori's 34 groups of 16 routers per chassis: a valid description SimGrid 3.32 cannot wire (it crashes).
  auto platform = platforms::catalog_platform("cori-knl");
  std::get<platforms::DragonflyTopology>(platform.network.topology.shape).groups = 34;
  EXPECT_NO_THROW(check_simulatable(platform, 2));
  WorldOptions world;
  world.size = 2;
  world.payload = false;
  try {
    simgrid::run(platform, world, [](Comm&) {});
    FAIL() << "SimGrid was handed a dragonfly it cannot wire";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("34 groups"), std::string::npos) << message;
    EXPECT_NE(message.find("analytic"), std::string::npos) << message;
  }
}

TEST(PlatformBuilder, PcieTreeSharesASwitchUplinkOnly) {
  // m40-cluster: 8 devices per node, 4 below each switch, every PCIe link x16. Two transfers between devices of
  // one switch share nothing; two crossing from one switch to the other share both uplinks.
  const auto platform = platforms::catalog_platform("m40-cluster");
  const std::size_t bytes = std::size_t{1} << 26;
  const auto two_transfers = [&](int from_a, int to_a, int from_b, int to_b) {
    WorldOptions world;
    world.size = 8;
    world.payload = false;
    return simgrid::run(platform, world,
                        [&](Comm& comm) {
                          const int r = comm.rank();
                          if (r == from_a) comm.send(to_a, 0, nullptr, bytes, Category::kNetwork);
                          if (r == to_a) comm.recv(from_a, 0, nullptr, bytes, Category::kNetwork);
                          if (r == from_b) comm.send(to_b, 0, nullptr, bytes, Category::kNetwork);
                          if (r == to_b) comm.recv(from_b, 0, nullptr, bytes, Category::kNetwork);
                        })
        .time_s;
  };
  const auto& tree = std::get<platforms::PcieTree>(platform.nodes.intra_node);
  const double link_Bps = tree.switches.front().device_link->bandwidth_Bps;
  EXPECT_NEAR(two_transfers(0, 1, 2, 3), static_cast<double>(bytes) / link_Bps, 1e-9);
  EXPECT_NEAR(two_transfers(0, 4, 1, 5), 2 * static_cast<double>(bytes) / link_Bps, 1e-9);
}

TEST(PlatformBuilder, OneRankPerNode) {
  const auto platform = flat_platform(4, kLatency, kBandwidth, 1e9);
  EXPECT_NO_THROW(check_simulatable(platform, 4));
  try {
    check_simulatable(platform, 5);
    FAIL() << "5 ranks on 4 nodes were accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("holds 4 ranks (4 nodes x 1 per node) but the world has 5"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(check_simulatable(platform, 0), InputError);
}

TEST(PlatformBuilder, StarCatalogPlatformRuns) {
  const auto m40 = platforms::catalog_platform("m40-cluster");
  ASSERT_EQ(m40.network.topology.kind(), platforms::TopologyKind::kStar);
  WorldOptions world;
  world.size = 2;
  world.payload = false;
  SimulationOptions options;
  options.placement.ranks_per_node = 1;  // rank 1 on the next node: the message crosses the network
  const auto result = simgrid::run(
      m40, world,
      [](Comm& comm) {
        if (comm.rank() == 0) comm.send(1, 0, nullptr, 1 << 20, Category::kNetwork);
        if (comm.rank() == 1) comm.recv(0, 0, nullptr, 1 << 20, Category::kNetwork);
      },
      options);
  const auto& link = m40.network.link;
  EXPECT_NEAR(result.time_s, link.latency_s + (1 << 20) / link.bandwidth_Bps, 1e-12);
}

// Selene's A100 as a rank that owns it runs kernels: 108 SMs, CUTLASS's default 128 x 256 tile and the other SM80
// tiles to choose from, its HBM as the one tier.
TEST(PlatformBuilder, SelenesDeviceRunsKernelsOnItsSmsAndCutlassTiles) {
  const auto selene = platforms::catalog_platform("selene");
  const auto& a100 = selene.nodes.devices.at(0);
  const auto machine = kernel_machine(a100.kernels, a100.peak_flops, 1, {a100.memory});
  ASSERT_TRUE(machine.has_value());
  EXPECT_DOUBLE_EQ(machine->peak_flops, 312e12);
  EXPECT_EQ(machine->parallel_units, 108);
  EXPECT_EQ(machine->tile_m, 128);
  EXPECT_EQ(machine->tile_n, 256);
  EXPECT_EQ(machine->tiles, a100.kernels->tiles);
  EXPECT_EQ(machine->tiles.size(), 7U);
  EXPECT_DOUBLE_EQ(machine->tile_k_overhead, 213);
  EXPECT_DOUBLE_EQ(machine->kernel_fixed_s, 5e-6);
  ASSERT_EQ(machine->tiers.size(), 1U);
  EXPECT_DOUBLE_EQ(machine->tiers[0].bandwidth_Bps, 2039e9);
  // A GEMM of n = 96 (a head dimension) takes a 128-wide tile, not the default's 256 columns.
  KernelMachine one_tile = *machine;
  one_tile.tiles.clear();
  EXPECT_GT(gemm_shape_efficiency(*machine, {8192, 96, 1024}), 1.5 * gemm_shape_efficiency(one_tile, {8192, 96, 1024}));
}

TEST(PlatformBuilder, FlatPlatformChecksItsArguments) {
  EXPECT_THROW(flat_platform(0, kLatency, kBandwidth, 1e9), InputError);
  EXPECT_THROW(flat_platform(2, -1, kBandwidth, 1e9), InputError);
  EXPECT_THROW(flat_platform(2, kLatency, 0, 1e9), InputError);
  EXPECT_THROW(flat_platform(2, kLatency, kBandwidth, 0), InputError);
  const auto platform = flat_platform(3, kLatency, kBandwidth, 2e9);
  EXPECT_EQ(platform.nodes.count, 3);
  const auto sites = place_ranks(platform, 3);
  EXPECT_EQ(sites[2].node, 2);
  EXPECT_EQ(sites[2].peak_flops, 2e9);
  EXPECT_EQ(sites[2].memory_bandwidth_Bps, 0);
}

}  // namespace
}  // namespace dsgd::simulate
