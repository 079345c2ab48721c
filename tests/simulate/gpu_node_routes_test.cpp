// simulate/simgrid/platform_builder: GPU nodes as they are built. Device-to-device messages take the NVLink pair of
// two neighbours, the PCIe tree between other devices (or the fewest NVLink hops where the platform routes through
// devices), the NVSwitch where there is one; inter-node messages leave through the NIC that serves the device.
// Every check prints the expectation beside the simulated value.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/simulated_message.hpp"

namespace dsgd::simulate {
namespace {

constexpr std::size_t kBytes = std::size_t{64} << 20;
constexpr double kN = static_cast<double>(kBytes);

platforms::Platform fixture(const std::string& name) {
  return platforms::read_platform_file(std::string(DSGD_TEST_DATA_DIR) + "/platforms/" + name + ".json");
}

// Seconds until every transfer (from, to) of `kBytes`, all started together, has arrived.
double concurrent_s(const platforms::Platform& platform, int ranks, const std::vector<std::pair<int, int>>& transfers) {
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  SimulationOptions options;
  options.fidelity = Fidelity::kMessage;
  return simgrid::run(
             platform, world,
             [&](Comm& comm) {
               // Non-blocking, so that one rank's several messages run at once.
               std::vector<RequestPtr> requests;
               for (std::size_t i = 0; i < transfers.size(); ++i) {
                 const auto [from, to] = transfers[i];
                 const Tag tag = static_cast<Tag>(i);
                 if (comm.rank() == from) requests.push_back(comm.isend(to, tag, nullptr, kBytes, Category::kNetwork));
                 if (comm.rank() == to) requests.push_back(comm.irecv(from, tag, nullptr, kBytes, Category::kNetwork));
               }
               for (auto& request : requests) request->wait();
             },
             options)
      .time_s;
}

// The labels of the connections a route inside a node crosses.
std::vector<std::string> labels(const DeviceNodeLayout& layout, int from, int to) {
  std::vector<std::string> out;
  for (const auto& hop : layout.between[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)]) {
    out.push_back(layout.connections[static_cast<std::size_t>(hop.connection)].label);
  }
  return out;
}

void expect_message(const platforms::Platform& platform, int ranks, int from, int to, double expected,
                    const std::string& what) {
  const double simulated = testing::simulated_message_s(platform, ranks, from, to, kBytes);
  std::printf("%s: %d -> %d, %zu bytes: expected %.9g s, simulated %.9g s\n", what.c_str(), from, to, kBytes, expected,
              simulated);
  EXPECT_NEAR(simulated, expected, 1e-9 * expected) << what << ": " << from << " -> " << to;
}

void expect_concurrent(const platforms::Platform& platform, int ranks,
                       const std::vector<std::pair<int, int>>& transfers, double expected, const std::string& what) {
  const double simulated = concurrent_s(platform, ranks, transfers);
  std::printf("%s: expected %.9g s, simulated %.9g s\n", what.c_str(), expected, simulated);
  EXPECT_NEAR(simulated, expected, 1e-9 * expected) << what;
}

TEST(GpuNodeRoutes, NvlinkNeighboursTakeTheirPairAndOthersThePcieTree) {
  // nvlink_node: pairs 0-1 (2 links of 20 GB/s, 2 us), 1-2 (1 link), 2-3 (25 GB/s, 1 us); devices 0-1 below sw0,
  // 2-3 below sw1, every PCIe link 16 GB/s; route_through_devices false.
  const auto platform = fixture("nvlink_node");
  const auto layout = device_node_layout(platform);
  EXPECT_EQ(labels(layout, 0, 1), (std::vector<std::string>{"nvlink-0-1"}));
  EXPECT_EQ(labels(layout, 3, 2), (std::vector<std::string>{"nvlink-2-3"}));
  // 0 and 2 share no NVLink: up to the root complex and down, 4 PCIe hops.
  EXPECT_EQ(labels(layout, 0, 2), (std::vector<std::string>{"sw0-dev0", "sw0-up", "sw1-up", "sw1-dev0"}));
  expect_message(platform, 4, 0, 1, 2e-6 + kN / 40e9, "bonded NVLink pair");
  expect_message(platform, 4, 1, 0, 2e-6 + kN / 40e9, "bonded NVLink pair, backwards");
  expect_message(platform, 4, 3, 2, 1e-6 + kN / 25e9, "NVLink pair of its own numbers");
  expect_message(platform, 4, 0, 2, kN / 16e9, "no NVLink: PCIe tree (no latency in the tree)");
  expect_message(platform, 4, 3, 0, kN / 16e9, "no NVLink: PCIe tree");
}

TEST(GpuNodeRoutes, RoutingThroughDevicesTakesTheFewestNvlinkHops) {
  auto platform = fixture("nvlink_node");
  platform.nodes.nvlink->route_through_devices = true;
  const auto layout = device_node_layout(platform);
  EXPECT_EQ(labels(layout, 0, 2), (std::vector<std::string>{"nvlink-0-1", "nvlink-1-2"}));
  EXPECT_EQ(labels(layout, 3, 0), (std::vector<std::string>{"nvlink-2-3", "nvlink-1-2", "nvlink-0-1"}));
  // Latencies add up; the narrowest pair sets the bandwidth.
  expect_message(platform, 4, 0, 2, 2 * 2e-6 + kN / 20e9, "2 NVLink hops");
  expect_message(platform, 4, 0, 3, 2e-6 + 2e-6 + 1e-6 + kN / 20e9, "3 NVLink hops");
  // The CPU still reaches the devices over PCIe.
  EXPECT_EQ(labels(layout, 4, 1), (std::vector<std::string>{"sw0-up", "sw0-dev1"}));
}

TEST(GpuNodeRoutes, Dgx1HybridCubeMesh) {
  auto dgx1 = platforms::catalog_platform("dgx1-ib");
  const double link_s = dgx1.nodes.nvlink->pairs.front().latency_s;
  const double nvlink_Bps = dgx1.nodes.nvlink->pairs.front().bandwidth_Bps;
  const double pcie_Bps =
      std::get<platforms::PcieTree>(dgx1.nodes.intra_node).switches.front().device_link->bandwidth_Bps;
  const auto layout = device_node_layout(dgx1);
  EXPECT_EQ(labels(layout, 0, 4), (std::vector<std::string>{"nvlink-0-4"}));
  EXPECT_EQ(labels(layout, 0, 5).size(), 4U);  // two switches of two CPUs: PCIe and the host, as CUDA peer copies
  expect_message(dgx1, 8, 0, 4, link_s + kN / nvlink_Bps, "DGX-1 neighbours across the quads");
  expect_message(dgx1, 8, 3, 1, link_s + kN / nvlink_Bps, "DGX-1 neighbours in a quad");
  expect_message(dgx1, 8, 0, 5, kN / pcie_Bps, "DGX-1 non-neighbours over PCIe");
  dgx1.nodes.nvlink->route_through_devices = true;
  EXPECT_EQ(labels(device_node_layout(dgx1), 0, 5), (std::vector<std::string>{"nvlink-0-1", "nvlink-1-5"}));
  expect_message(dgx1, 8, 0, 5, 2 * link_s + kN / nvlink_Bps, "DGX-1 non-neighbours through GPU 1");
}

TEST(GpuNodeRoutes, NvswitchPortsAreSharedByADevicesMessages) {
  const auto a100 = platforms::catalog_platform("dgx-a100-ib");
  const double latency_s = a100.nodes.nvswitch->latency_s;
  const double port_Bps = a100.nodes.nvswitch->bandwidth_Bps;
  EXPECT_EQ(labels(device_node_layout(a100), 0, 7), (std::vector<std::string>{"nvswitch-dev0", "nvswitch-dev7"}));
  expect_message(a100, 8, 0, 7, latency_s + kN / port_Bps, "NVSwitch, 2 ports");
  expect_concurrent(a100, 8, {{0, 1}, {0, 2}}, latency_s + 2 * kN / port_Bps, "NVSwitch, one sender's 2 messages");
  expect_concurrent(a100, 8, {{0, 1}, {2, 3}}, latency_s + kN / port_Bps, "NVSwitch, 2 disjoint pairs");
  // Without a PCIe tree, the fixture's devices reach each other over the switch alone.
  const auto bare = fixture("nvswitch_node");
  expect_message(bare, 4, 1, 3, 2e-6 + kN / 100e9, "NVSwitch without a PCIe tree");
}

TEST(GpuNodeRoutes, InterNodeTrafficLeavesThroughTheDevicesNic) {
  // nvlink_node: NIC 0 serves devices 0-1, NIC 1 devices 2-3, each 5 GB/s (the link's 10 GB/s is not used), star.
  const auto platform = fixture("nvlink_node");
  const auto layout = device_node_layout(platform);
  EXPECT_EQ(layout.nic, (std::vector<int>{0, 0, 1, 1, 0}));  // the CPU through NIC 0
  const double alpha = platform.network.link.latency_s;
  expect_message(platform, 8, 1, 5, alpha + kN / 5e9, "one message through a NIC");
  expect_concurrent(platform, 8, {{0, 4}, {1, 5}}, alpha + 2 * kN / 5e9, "two messages through NIC 0");
  expect_concurrent(platform, 8, {{0, 4}, {2, 6}}, alpha + kN / 5e9, "NICs 0 and 1 at once");

  // DGX-1 on its fat tree: GPUs 0-1 share NIC 0, GPU 2 has NIC 1; the fabric carries four NICs per node.
  const auto dgx1 = platforms::catalog_platform("dgx1-ib");
  const auto& edr = dgx1.network.link;
  expect_message(dgx1, 16, 2, 10, edr.latency_s + kN / edr.bandwidth_Bps, "DGX-1, one message between nodes");
  expect_concurrent(dgx1, 16, {{0, 8}, {1, 9}}, edr.latency_s + 2 * kN / edr.bandwidth_Bps,
                    "DGX-1, GPUs 0 and 1 share NIC 0");
  expect_concurrent(dgx1, 16, {{0, 8}, {2, 10}, {4, 12}, {6, 14}}, edr.latency_s + kN / edr.bandwidth_Bps,
                    "DGX-1, four GPUs on four NICs");
  // DGX A100: a NIC per GPU.
  const auto a100 = platforms::catalog_platform("dgx-a100-ib");
  const auto& hdr = a100.network.link;
  expect_concurrent(a100, 16, {{0, 8}, {1, 9}}, hdr.latency_s + kN / hdr.bandwidth_Bps,
                    "DGX A100, GPUs 0 and 1 on NICs 0 and 1");
}

TEST(GpuNodeRoutes, DeviceRanksKnowTheirNode) {
  const auto dgx1 = platforms::catalog_platform("dgx1-ib");
  const auto sites = place_ranks(dgx1, 24);
  for (int rank = 0; rank < 24; ++rank) {
    EXPECT_EQ(sites[static_cast<std::size_t>(rank)].node, rank / 8) << rank;
    EXPECT_EQ(sites[static_cast<std::size_t>(rank)].unit, "device " + std::to_string(rank % 8)) << rank;
  }
  PlacementOptions master;
  master.master_on_host = true;
  const auto with_master = place_ranks(dgx1, 10, master);
  EXPECT_EQ(with_master[0].node, 0);
  EXPECT_EQ(with_master[0].unit, "cpu");
  EXPECT_EQ(with_master[9].node, 1);  // rank 9 is the ninth device
}

}  // namespace
}  // namespace dsgd::simulate
