// GPU nodes as they are built: NVLink pairs, an NVSwitch and several NICs in a platform file load as described,
// survive a round trip, and every malformed case is rejected with one line naming the file, the JSON path and what
// was expected. The catalog's DGX entries carry the topologies of their vendor documents.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"

namespace dsgd::platforms {
namespace {

std::string data_dir() { return std::string(DSGD_TEST_DATA_DIR) + "/platforms"; }
Json fixture(std::string_view name) { return read_json_file(data_dir() + "/" + std::string(name) + ".json"); }

TEST(PlatformsGpuNode, NvlinkPairsNicsAndTreeLoad) {
  const Platform platform = read_platform_file(data_dir() + "/nvlink_node.json");
  ASSERT_TRUE(platform.nodes.nvlink.has_value());
  const NvLinkMesh& mesh = *platform.nodes.nvlink;
  ASSERT_EQ(mesh.pairs.size(), 3U);
  EXPECT_FALSE(mesh.route_through_devices);
  EXPECT_EQ(mesh.links_per_device, 3);
  // Pair 0-1 takes the list's numbers and bonds two links; pair 2-3 sets its own.
  EXPECT_EQ(mesh.pairs[0].links, 2);
  EXPECT_DOUBLE_EQ(mesh.pairs[0].pair_bandwidth_Bps(), 40e9);
  EXPECT_DOUBLE_EQ(mesh.pairs[0].latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(mesh.pairs[2].bandwidth_Bps, 25e9);
  EXPECT_DOUBLE_EQ(mesh.pairs[2].latency_s, 1e-6);
  EXPECT_EQ(mesh.pairs[2].sources.count("bandwidth_Bps"), 1U);
  ASSERT_TRUE(platform.nodes.nics.has_value());
  const Nics& nics = *platform.nodes.nics;
  EXPECT_EQ(nics.count, 2);
  EXPECT_EQ(nics.bandwidth_Bps, 5e9);
  EXPECT_EQ(nics.nic_of_device(1), 0);
  EXPECT_EQ(nics.nic_of_device(2), 1);
  EXPECT_EQ(nics.pcie_switches, (std::vector<std::string>{"sw0", "sw1"}));
  EXPECT_FALSE(platform.nodes.nvswitch.has_value());
}

TEST(PlatformsGpuNode, NvswitchWithoutATreeLoads) {
  const Platform platform = read_platform_file(data_dir() + "/nvswitch_node.json");
  ASSERT_TRUE(platform.nodes.nvswitch.has_value());
  EXPECT_DOUBLE_EQ(platform.nodes.nvswitch->bandwidth_Bps, 100e9);
  EXPECT_DOUBLE_EQ(platform.nodes.nvswitch->latency_s, 2e-6);
  ASSERT_TRUE(platform.nodes.nics.has_value());
  EXPECT_EQ(platform.nodes.nics->nic_of_device(3), 3);
  EXPECT_TRUE(platform.nodes.nics->pcie_switches.empty());
  EXPECT_FALSE(platform.nodes.nics->bandwidth_Bps.has_value());
}

TEST(PlatformsGpuNode, RoundTripKeepsEveryField) {
  for (const auto* name : {"nvlink_node", "nvswitch_node"}) {
    const Platform first = parse_platform(fixture(name), name);
    const Json written = to_json(first);
    const Platform second = parse_platform(written, name);
    EXPECT_EQ(to_json(second), written) << name;
  }
  for (const auto* name : {"dgx1-ib", "dgx-a100-ib", "p100-roce-25g", "selene", "dgx-h100"}) {
    const Platform first = catalog_platform(name);
    EXPECT_EQ(to_json(parse_platform(to_json(first), name)), to_json(first)) << name;
  }
}

TEST(PlatformsGpuNode, Dgx1IsAHybridCubeMeshOfFourLinksPerGpu) {
  const Platform dgx1 = catalog_platform("dgx1-ib");
  EXPECT_EQ(dgx1.nodes.count * dgx1.nodes.devices_per_node(), 512);
  ASSERT_TRUE(dgx1.nodes.nvlink.has_value());
  const auto& pairs = dgx1.nodes.nvlink->pairs;
  ASSERT_EQ(pairs.size(), 16U);  // 12 cube edges + the diagonals of 2 faces
  std::vector<int> links(8, 0);
  std::set<std::pair<int, int>> linked;
  for (const auto& pair : pairs) {
    links[static_cast<std::size_t>(pair.a)] += pair.links;
    links[static_cast<std::size_t>(pair.b)] += pair.links;
    linked.insert(std::minmax(pair.a, pair.b));
    EXPECT_DOUBLE_EQ(pair.bandwidth_Bps, 20e9);
  }
  for (const int count : links) EXPECT_EQ(count, 4);
  // Two fully connected quads joined by 0-4, 1-5, 2-6, 3-7; no link from 0 to 5, 6 or 7.
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) {
      EXPECT_TRUE(linked.contains({a, b}));
      EXPECT_TRUE(linked.contains({a + 4, b + 4}));
    }
    EXPECT_TRUE(linked.contains({a, a + 4}));
  }
  EXPECT_FALSE(linked.contains({0, 5}));
  ASSERT_TRUE(dgx1.nodes.nics.has_value());
  EXPECT_EQ(dgx1.nodes.nics->count, 4);
  EXPECT_EQ(dgx1.nodes.nics->nic_of_device(5), 2);

  const Platform a100 = catalog_platform("dgx-a100-ib");
  EXPECT_EQ(a100.nodes.count * a100.nodes.devices_per_node(), 512);
  ASSERT_TRUE(a100.nodes.nvswitch.has_value());
  ASSERT_TRUE(a100.nodes.nics.has_value());
  EXPECT_EQ(a100.nodes.nics->count, 8);
  const Platform roce = catalog_platform("p100-roce-25g");
  EXPECT_EQ(roce.nodes.count * roce.nodes.devices_per_node(), 512);
  EXPECT_FALSE(roce.nodes.nics.has_value());
}

// Selene as Megatron-LM SC'21 describes it (sec. 5): 560 DGX A100 of 8 A100 80GB, 8 HDR NICs each, a three-level
// fat tree; the device at its FP16 tensor peak, with CUTLASS's SM80 tiles.
TEST(PlatformsGpuNode, SeleneIs560DgxA100OnAThreeLevelFatTree) {
  const Platform selene = catalog_platform("selene");
  EXPECT_EQ(selene.nodes.count, 560);
  EXPECT_EQ(selene.nodes.count * selene.nodes.devices_per_node(), 4480);
  ASSERT_EQ(selene.nodes.devices.size(), 1U);
  const DeviceGroup& a100 = selene.nodes.devices[0];
  EXPECT_EQ(a100.count, 8);
  EXPECT_DOUBLE_EQ(a100.peak_flops, 312e12);
  EXPECT_EQ(a100.memory.size_bytes, 80.0 * (1 << 30)) << "80 GiB";
  EXPECT_DOUBLE_EQ(a100.memory.bandwidth_Bps, 2039e9);
  ASSERT_TRUE(selene.nodes.nvswitch.has_value());
  EXPECT_DOUBLE_EQ(selene.nodes.nvswitch->bandwidth_Bps, 300e9);
  ASSERT_TRUE(selene.nodes.nics.has_value());
  EXPECT_EQ(selene.nodes.nics->count, 8);
  EXPECT_DOUBLE_EQ(selene.network.link.bandwidth_Bps, 25e9) << "HDR 200 Gb/s";
  const auto* tree = std::get_if<FatTreeTopology>(&selene.network.topology.shape);
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->down.size(), 3U);
  EXPECT_EQ(tree->down[0] * tree->down[1] * tree->down[2], 560) << "exactly the nodes";
  EXPECT_EQ(tree->up[1], tree->down[0]) << "non-blocking leaves";
  EXPECT_EQ(tree->up[2], tree->down[1]) << "non-blocking spines";
  ASSERT_TRUE(a100.kernels.has_value());
  const KernelModel& kernels = *a100.kernels;
  EXPECT_EQ(kernels.parallel_units, 108);
  EXPECT_EQ(kernels.tile_m, 128);
  EXPECT_EQ(kernels.tile_n, 256);
  EXPECT_EQ(kernels.tiles, (std::vector<std::array<std::int64_t, 2>>{
                               {256, 128}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}, {64, 64}}));
  EXPECT_DOUBLE_EQ(kernels.tile_k_overhead, 213);
  EXPECT_TRUE(kernels.sources.at("efficiency").starts_with("FITTED")) << "a fitted number says so";

  const Platform h100 = catalog_platform("dgx-h100");
  EXPECT_EQ(h100.nodes.count * h100.nodes.devices_per_node(), 1024);
  EXPECT_DOUBLE_EQ(h100.nodes.devices.at(0).peak_flops, 989.4e12);
  ASSERT_TRUE(h100.nodes.devices[0].kernels.has_value());
  EXPECT_EQ(h100.nodes.devices[0].kernels->parallel_units, 132);
  EXPECT_EQ(h100.nodes.devices[0].kernels->tiles, kernels.tiles);
  EXPECT_DOUBLE_EQ(h100.nodes.nvswitch->bandwidth_Bps, 450e9);
  EXPECT_DOUBLE_EQ(h100.network.link.bandwidth_Bps, 50e9) << "NDR 400 Gb/s";
}

// One edit of a fixture -- the value at a JSON path set, or erased where no value is given -- and what the
// rejection names.
struct BadEdit {
  std::string test;
  std::string fixture;
  std::string path;
  std::optional<Json> value;
  std::vector<std::string_view> parts;
};

std::vector<BadEdit> bad_edits() {
  return {
      {"PairDeviceOutOfRange",
       "nvlink_node",
       "/nodes/nvlink/pairs/1/b",
       4,
       {"/nodes/nvlink/pairs/1/b", "expected a device from 0 to 3", "got 4"}},
      {"PairOfOneDevice", "nvlink_node", "/nodes/nvlink/pairs/1/b", 1, {"/nodes/nvlink/pairs/1/b", "to itself"}},
      {"DuplicatePairReversed",
       "nvlink_node",
       "/nodes/nvlink/pairs/1",
       Json{{"a", 1}, {"b", 0}, {"links", 1}},
       {"/nodes/nvlink/pairs/1", "devices 0 and 1 are already paired at /nodes/nvlink/pairs/0"}},
      {"ZeroLinks", "nvlink_node", "/nodes/nvlink/pairs/0/links", 0, {"/nodes/nvlink/pairs/0/links", "positive"}},
      {"PairUnknownField",
       "nvlink_node",
       "/nodes/nvlink/pairs/0/bandwith_Bps",
       1e9,
       {"/nodes/nvlink/pairs/0", "unknown field 'bandwith_Bps'"}},
      {"PairWithoutBandwidth",
       "nvlink_node",
       "/nodes/nvlink/bandwidth_Bps",
       {},
       {"/nodes/nvlink/pairs/0", "missing required field 'bandwidth_Bps'", "/nodes/nvlink"}},
      {"PairsWithoutSource", "nvlink_node", "/nodes/nvlink/sources/pairs", {}, {"/nodes/nvlink/pairs", "source"}},
      {"DefaultWithoutSource",
       "nvlink_node",
       "/nodes/nvlink/sources/latency_s",
       {},
       {"/nodes/nvlink/latency_s", "number without a source"}},
      {"PairOwnNumberWithoutSource",
       "nvlink_node",
       "/nodes/nvlink/pairs/2/sources/latency_s",
       {},
       {"/nodes/nvlink/pairs/2/latency_s", "number without a source"}},
      {"MoreLinksThanPorts",
       "nvlink_node",
       "/nodes/nvlink/pairs/1/links",
       2,
       {"/nodes/nvlink/pairs/1/links", "device 1 would have 4 NVLinks, more than links_per_device = 3"}},
      {"NvlinkAndNvswitch",
       "nvlink_node",
       "/nodes/nvswitch",
       Json{{"bandwidth_Bps", 1e9}, {"latency_s", 1e-6}, {"sources", {{"bandwidth_Bps", "x"}, {"latency_s", "x"}}}},
       {"/nodes/nvswitch", "not both"}},
      {"NvlinkGapWithoutATree",
       "nvlink_node",
       "/nodes/intra_node",
       {},
       {"/nodes/nvlink", "devices 0 and 2 have no NVLink route of their own", "no pcie_tree"}},
      {"NvswitchNegativeBandwidth",
       "nvswitch_node",
       "/nodes/nvswitch/bandwidth_Bps",
       -1,
       {"/nodes/nvswitch/bandwidth_Bps", "positive"}},
      {"NvswitchUnknownField",
       "nvswitch_node",
       "/nodes/nvswitch/ports",
       6,
       {"/nodes/nvswitch", "unknown field 'ports'"}},
      {"NicListsShort",
       "nvlink_node",
       "/nodes/nics/count",
       3,
       {"/nodes/nics/devices", "one list of devices per NIC (count = 3), got 2"}},
      {"DeviceOnTwoNics",
       "nvlink_node",
       "/nodes/nics/devices/1/0",
       1,
       {"/nodes/nics/devices/1/0", "device 1 is already served by NIC 0"}},
      {"DeviceOnNoNic",
       "nvlink_node",
       "/nodes/nics/devices/1",
       Json::array({2}),
       {"/nodes/nics/devices", "device 3 is served by no NIC"}},
      {"NicDeviceOutOfRange",
       "nvswitch_node",
       "/nodes/nics/devices/0/0",
       7,
       {"/nodes/nics/devices/0/0", "expected a device from 0 to 3"}},
      {"NicOnUnknownSwitch",
       "nvlink_node",
       "/nodes/nics/pcie_switches/1",
       "sw9",
       {"/nodes/nics/pcie_switches/1", "sw9", "host", "sw0", "sw1"}},
      {"NicOnSwitchWithoutATree",
       "nvswitch_node",
       "/nodes/nics/pcie_switches",
       Json::array({"host", "host", "host", "host"}),
       {"/nodes/nics/pcie_switches", "pcie_tree"}},
      {"NicWithoutSource", "nvlink_node", "/nodes/nics/sources/devices", {}, {"/nodes/nics/devices", "source"}},
      {"NvswitchOfOneDevice", "nvswitch_node", "/nodes/devices/0/count", 1, {"/nodes/nvswitch", "at least 2"}},
  };
}

class PlatformsGpuNodeRejects : public ::testing::TestWithParam<BadEdit> {};

TEST_P(PlatformsGpuNodeRejects, WithOneLine) {
  const BadEdit& edit = GetParam();
  Json json = fixture(edit.fixture);
  const auto pointer = Json::json_pointer(edit.path);
  if (edit.value) {
    json[pointer] = *edit.value;
  } else {
    json[pointer.parent_pointer()].erase(pointer.back());
  }
  try {
    parse_platform(json, "test.json");
    FAIL() << "accepted: " << edit.path;
  } catch (const InputError& error) {
    const std::string message = error.what();
    std::printf("%s\n", message.c_str());
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    EXPECT_EQ(message.rfind("test.json: ", 0), 0U) << message;
    for (const auto part : edit.parts)
      EXPECT_NE(message.find(part), std::string::npos) << part << " not in " << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Edits, PlatformsGpuNodeRejects, ::testing::ValuesIn(bad_edits()),
                         [](const auto& edit) { return edit.param.test; });

TEST(PlatformsGpuNode, NicsOnNodesWithoutDevicesRejected) {
  Json json = read_json_file(data_dir() + "/minimal.json");
  json["nodes"]["nics"] = {{"count", 1}, {"devices", {{0}}}, {"sources", {{"count", "x"}, {"devices", "x"}}}};
  try {
    parse_platform(json, "test.json");
    FAIL() << "accepted NICs without devices";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("test.json: /nodes/nics: NICs serve a node's devices"), std::string::npos)
        << error.what();
  }
}

TEST(PlatformsGpuNode, NicBandwidthBesideASegmentedLinkRejected) {
  Json json = fixture("nvlink_node");
  json["network"]["link"]["segments"] = {
      {{"min_bytes", 0},
       {"latency_s", 1e-6},
       {"bandwidth_Bps", 1e9},
       {"sources", {{"min_bytes", "x"}, {"latency_s", "x"}, {"bandwidth_Bps", "x"}}}}};
  try {
    parse_platform(json, "test.json");
    FAIL() << "accepted NICs of their own bandwidth on a piecewise link";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("test.json: /nodes/nics/bandwidth_Bps: a piecewise network link"),
              std::string::npos)
        << error.what();
  }
}

TEST(PlatformsGpuNode, RoutingThroughDevicesNeedsOnlyAConnectedMesh) {
  Json json = fixture("nvlink_node");
  json["nodes"].erase("intra_node");
  json["nodes"]["nics"].erase("pcie_switches");
  json["nodes"]["nics"]["sources"].erase("pcie_switches");
  json["nodes"]["nvlink"]["route_through_devices"] = true;
  EXPECT_NO_THROW(parse_platform(json, "test.json"));  // 0-1-2-3 is a chain: every pair has a route
}

}  // namespace
}  // namespace dsgd::platforms
