// simulate/simgrid/platform_builder: a flat star costs alpha + n / bandwidth per message, and what is not simulated
// yet is refused.

#include "simulate/simgrid/platform_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "platforms/catalog.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::simulate {
namespace {

constexpr double kLatency = 1e-6;
constexpr double kBandwidth = 1e9;

// Simulated seconds for rank 0 to send `bytes` to rank 1 (size only).
double one_message_s(const platforms::Platform& platform, std::size_t bytes) {
  WorldOptions world;
  world.size = 2;
  world.payload = false;
  const auto result = run_simulation(platform, world, [bytes](Comm& comm) {
    if (comm.rank() == 0) comm.send(1, 7, nullptr, bytes, Category::kNetwork);
    if (comm.rank() == 1) comm.recv(0, 7, nullptr, bytes, Category::kNetwork);
  });
  return result.simulated_s;
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
  platform.network.link.segments = {{0, 2e-7, 3e9, {}},
                                    {4044, 1.5e-6, 8e9, {}},
                                    {65536, 3e-6, 12e9, {}},
                                    {4194304, 0, 4e9, {}}};
  return platform;
}

TEST(PlatformBuilder, SegmentedLinkCostsItsSegmentsAlphaPlusBytesOverBandwidth) {
  const auto platform = segmented_platform();
  const auto& link = platform.network.link;
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4043}, std::size_t{4044},
                                  std::size_t{4045}, std::size_t{32768}, std::size_t{65535}, std::size_t{65536},
                                  std::size_t{1} << 20, std::size_t{4194303}, std::size_t{4194304},
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

TEST(PlatformBuilder, RefusesTopologiesNotYetSimulated) {
  const auto knl = platforms::catalog_platform("cori-knl");
  try {
    check_simulatable(knl, 4);
    FAIL() << "a dragonfly was accepted";
  } catch (const UnavailableError& error) {
    EXPECT_NE(std::string(error.what()).find("dragonfly is not yet simulated"), std::string::npos) << error.what();
  }
  EXPECT_THROW(run_simulation(knl, WorldOptions{4}, [](Comm&) {}), UnavailableError);
}

TEST(PlatformBuilder, OneRankPerNode) {
  const auto platform = flat_platform(4, kLatency, kBandwidth, 1e9);
  EXPECT_NO_THROW(check_simulatable(platform, 4));
  try {
    check_simulatable(platform, 5);
    FAIL() << "5 ranks on 4 nodes were accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("4 nodes but the world has 5 ranks"), std::string::npos) << error.what();
  }
  EXPECT_THROW(check_simulatable(platform, 0), InputError);
}

TEST(PlatformBuilder, StarCatalogPlatformRuns) {
  const auto m40 = platforms::catalog_platform("m40-cluster");
  ASSERT_EQ(m40.network.topology.kind(), platforms::TopologyKind::kStar);
  WorldOptions world;
  world.size = 2;
  world.payload = false;
  const auto result = run_simulation(m40, world, [](Comm& comm) {
    if (comm.rank() == 0) comm.send(1, 0, nullptr, 1 << 20, Category::kNetwork);
    if (comm.rank() == 1) comm.recv(0, 0, nullptr, 1 << 20, Category::kNetwork);
  });
  const auto& link = m40.network.link;
  EXPECT_NEAR(result.simulated_s, link.latency_s + (1 << 20) / link.bandwidth_Bps, 1e-12);
}

TEST(PlatformBuilder, FlatPlatformChecksItsArguments) {
  EXPECT_THROW(flat_platform(0, kLatency, kBandwidth, 1e9), InputError);
  EXPECT_THROW(flat_platform(2, -1, kBandwidth, 1e9), InputError);
  EXPECT_THROW(flat_platform(2, kLatency, 0, 1e9), InputError);
  EXPECT_THROW(flat_platform(2, kLatency, kBandwidth, 0), InputError);
  const auto platform = flat_platform(3, kLatency, kBandwidth, 2e9);
  EXPECT_EQ(platform.nodes.count, 3);
  EXPECT_EQ(node_rates(platform).flops, 2e9);
  EXPECT_EQ(node_rates(platform).memory_bandwidth_Bps, 0);
}

}  // namespace
}  // namespace dsgd::simulate
