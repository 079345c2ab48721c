// simulate/analytic/route_model: the closed-form route of every pair of ranks equals what SimGrid's message level
// simulates for a lone message (no contention): the empty message's latency and a large message's time, on every
// kind of platform the builder makes (flat star with a backbone and a piecewise link, KNL mesh in both cluster
// modes on the dragonfly, PCIe trees, fat tree, torus).

#include "simulate/analytic/route_model.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "simulate/simgrid/executor.hpp"
#include "tests/support/simulated_message.hpp"

namespace dsgd::simulate {
namespace {

void expect_routes_match(const platforms::Platform& platform, int ranks, const std::vector<std::pair<int, int>>& pairs,
                         const PlacementOptions& placement = {}) {
  const RouteModel model(platform, ranks, placement);
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{16} << 20}) {
    for (const auto& [from, to] : pairs) {
      const double simulated = testing::simulated_message_s(platform, ranks, from, to, bytes, placement);
      const double analytic = model.message_s(from, to, static_cast<double>(bytes));
      EXPECT_NEAR(analytic, simulated, 1e-9 * simulated + 1e-15)
          << platform.name << ": rank " << from << " -> " << to << ", " << bytes << " bytes";
    }
  }
}

TEST(RouteModel, FlatStarWithBackboneAndSegments) {
  auto platform = flat_platform(4, 2e-6, 1e9, 1e12);
  platform.network.topology.link_latency_s = 5e-7;
  platform.network.topology.link_bandwidth_Bps = 5e8;
  expect_routes_match(platform, 4, {{0, 1}, {3, 2}});
  platform.network.topology.link_latency_s.reset();
  platform.network.topology.link_bandwidth_Bps.reset();
  platform.network.link.segments = {{0, 1e-6, 2e9, {}}, {65536, 5e-6, 1e9, {}}};
  expect_routes_match(platform, 4, {{0, 1}, {3, 2}});
}

TEST(RouteModel, KnlMeshInsideANodeInBothClusterModes) {
  for (const auto mode : {platforms::ClusterMode::kQuadrant, platforms::ClusterMode::kSnc4}) {
    auto platform = platforms::catalog_platform("cori-knl");
    std::get<platforms::KnlMesh>(platform.nodes.intra_node).cluster_mode = mode;
    expect_routes_match(platform, 68, {{0, 67}, {67, 0}, {5, 40}, {33, 34}});
    PlacementOptions four;
    four.ranks_per_node = 4;
    expect_routes_match(platform, 4, {{0, 1}, {0, 3}, {2, 1}}, four);
  }
}

TEST(RouteModel, DragonflyBetweenKnlNodes) {
  // Ranks on nodes 0, 1 (same router), 4 (same chassis), 64 (another chassis), 70, 384 (another group), 400, 800.
  const auto platform = platforms::catalog_platform("cori-knl");
  PlacementOptions one;
  one.ranks_per_node = 1;
  expect_routes_match(platform, 801, {{0, 1}, {0, 4}, {0, 64}, {5, 70}, {0, 384}, {70, 400}, {400, 70}, {385, 800}},
                      one);
  PlacementOptions four;
  four.ranks_per_node = 4;
  expect_routes_match(platform, 8, {{3, 6}, {1, 4}}, four);
}

TEST(RouteModel, PcieTreesInsideAndBetweenNodes) {
  const auto platform = platforms::catalog_platform("m40-cluster");
  const int devices = platform.nodes.devices_per_node();
  expect_routes_match(platform, 2 * devices, {{0, 1}, {0, devices - 1}, {devices - 1, 1}, {1, devices + 2}});
  PlacementOptions master;
  master.master_on_host = true;
  expect_routes_match(platform, devices + 2, {{0, 1}, {devices, 0}, {0, devices + 1}}, master);
}

TEST(RouteModel, GpuNodesWithNvlinkNvswitchAndSeveralNics) {
  // Within a node (NVLink pairs, PCIe between non-neighbours, NVSwitch ports) and between nodes through each device's
  // NIC, on the fat trees of the DGX entries and a star of NICs of their own bandwidth.
  const std::vector<std::pair<int, int>> pairs = {{0, 1}, {0, 5}, {3, 7}, {6, 2}, {0, 8}, {2, 13}, {15, 4}};
  auto dgx1 = platforms::catalog_platform("dgx1-ib");
  expect_routes_match(dgx1, 16, pairs);
  dgx1.nodes.nvlink->route_through_devices = true;
  expect_routes_match(dgx1, 16, pairs);
  expect_routes_match(platforms::catalog_platform("dgx-a100-ib"), 16, pairs);
  const std::string data = std::string(DSGD_TEST_DATA_DIR) + "/platforms/";
  const std::vector<std::pair<int, int>> small = {{0, 1}, {0, 2}, {3, 0}, {1, 5}, {2, 7}, {6, 3}};
  expect_routes_match(platforms::read_platform_file(data + "nvlink_node.json"), 8, small);
  expect_routes_match(platforms::read_platform_file(data + "nvswitch_node.json"), 8, small);
  PlacementOptions master;
  master.master_on_host = true;
  expect_routes_match(platforms::catalog_platform("dgx1-ib"), 10, {{0, 1}, {0, 9}, {9, 0}}, master);
}

TEST(RouteModel, FatTreeAndTorus) {
  auto tree = flat_platform(16, 1e-6, 1e10, 1e12);
  tree.network.topology.shape = platforms::FatTreeTopology{{4, 4}, {1, 2}, {1, 1}};
  tree.network.topology.link_latency_s = 1e-7;
  tree.network.topology.link_bandwidth_Bps = 5e9;
  expect_routes_match(tree, 16, {{0, 1}, {0, 5}, {3, 15}, {12, 2}});
  auto torus = flat_platform(16, 1e-6, 1e10, 1e12);
  torus.network.topology.shape = platforms::TorusTopology{{4, 4}};
  torus.network.topology.link_latency_s = 1e-7;
  torus.network.topology.link_bandwidth_Bps = 5e9;
  expect_routes_match(torus, 16, {{0, 1}, {0, 3}, {0, 2}, {0, 5}, {0, 15}, {6, 9}, {1, 14}});
}

}  // namespace
}  // namespace dsgd::simulate
