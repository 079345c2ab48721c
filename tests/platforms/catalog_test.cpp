// The built-in catalog: every entry loads, the numbers the seeds and datasheets give come out as written, and the
// GPU-cluster builder makes what it says.
#include "platforms/catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "dsgd/config.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::platforms {
namespace {

std::string data_dir() { return std::string(DSGD_TEST_DATA_DIR) + "/platforms"; }

TEST(PlatformsCatalog, EveryEntryLoads) {
  const auto platforms = catalog_names();
  const auto links = catalog_link_names();
  EXPECT_EQ(platforms,
            (std::vector<std::string>{"cori-haswell", "cori-knl", "cori-knl-snc4", "dgx-a100-ib", "dgx-h100", "dgx1-ib",
                                      "k20-10gbe", "k20-1gbe", "k80-cluster", "k80-dmath", "knl-aries-10m",
                                      "knl-aries-1m", "m40-cluster", "p100-roce-25g", "selene"}));
  EXPECT_EQ(links, (std::vector<std::string>{"ethernet-10g-ne020", "ethernet-1g", "ib-fdr-56", "ib-qdr-40"}));
  for (const auto& name : platforms) {
    SCOPED_TRACE(name);
    const Platform platform = catalog_platform(name);
    EXPECT_EQ(platform.name, name);  // the name inside the file is its file name
    EXPECT_FALSE(platform.description.empty());
    EXPECT_FALSE(platform.nodes.cpu.sources.empty());
  }
  for (const auto& name : links) EXPECT_EQ(catalog_link(name).name, name);
}

// The catalog is listed file by file in platforms/CMakeLists.txt (no GLOB); this catches a file left out.
TEST(PlatformsCatalog, EveryCatalogFileIsEmbedded) {
  std::set<std::string> embedded;
  for (const auto& name : catalog_names()) embedded.insert(name);
  for (const auto& name : catalog_link_names()) embedded.insert(name);
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(DSGD_SOURCE_DIR) / "platforms" / "catalog")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    EXPECT_TRUE(embedded.contains(entry.path().stem().string()))
        << entry.path() << " is not listed in platforms/CMakeLists.txt";
  }
  EXPECT_EQ(files, static_cast<int>(embedded.size()));
}

TEST(PlatformsCatalog, CatalogTextIsAsciiJson) {
  for (const auto& name : catalog_names()) {
    const std::string text = catalog_text(name);
    EXPECT_TRUE(std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 128; }))
        << name;
    EXPECT_EQ(parse_json(text, name).at("name"), name);
  }
  EXPECT_NE(catalog_text("ib-fdr-56").find("dsgd-link/1"), std::string::npos);
  EXPECT_THROW(catalog_text("no-such-entry"), UnknownNameError);
}

TEST(PlatformsCatalog, CoriKnlNode) {
  const Platform knl = catalog_platform("cori-knl");
  const double expected = 68 * 1.4e9 * 64;  // 68 cores x 1.4 GHz x (2 VPUs x 16 lanes x FMA)
  EXPECT_NEAR(knl.nodes.cpu.peak_flops, expected, 0.01 * expected);
  EXPECT_EQ(knl.nodes.cpu.cores(), 68);
  ASSERT_EQ(knl.nodes.memories.size(), 2u);
  EXPECT_EQ(knl.nodes.memories[0].name, "mcdram");
  EXPECT_DOUBLE_EQ(*knl.nodes.memories[0].size_bytes, 16.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(knl.nodes.memories[0].bandwidth_Bps, 475e9);
  EXPECT_DOUBLE_EQ(*knl.nodes.memories[1].size_bytes, 96.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(knl.nodes.memories[1].bandwidth_Bps, 90e9);

  const auto& mesh = std::get<KnlMesh>(knl.nodes.intra_node);
  EXPECT_EQ(mesh.physical_tiles, 38);
  EXPECT_EQ(mesh.active_tiles * mesh.cores_per_tile, 68);
  EXPECT_EQ(mesh.mcdram_controllers.size(), 8u);
  EXPECT_EQ(mesh.ddr_controllers.size(), 2u);
  EXPECT_EQ(mesh.cluster_mode, ClusterMode::kQuadrant);
  EXPECT_EQ(std::get<KnlMesh>(catalog_platform("cori-knl-snc4").nodes.intra_node).cluster_mode, ClusterMode::kSnc4);
}

TEST(PlatformsCatalog, CoriAriesDragonflyIsBuildableBySimgrid) {
  for (const auto* name : {"cori-knl", "cori-haswell"}) {
    SCOPED_TRACE(name);
    const Platform platform = catalog_platform(name);
    const auto& fly = std::get<DragonflyTopology>(platform.network.topology.shape);
    EXPECT_LE(fly.groups, fly.routers_per_chassis);
    EXPECT_GE(*topology_capacity(platform.network.topology), platform.nodes.count);
  }
  const Platform knl = catalog_platform("cori-knl");
  EXPECT_EQ(simgrid_topology_string(knl.network.topology), "16,67;6,3;16,1;4");
  // Seed 000's largest run, 4352 cores, fits.
  EXPECT_GE(std::int64_t{knl.nodes.count} * knl.nodes.cpu.cores(), 4352);
  EXPECT_EQ(catalog_platform("cori-haswell").nodes.cpu.cores(), 32);  // 64,128 cores / 2,004 nodes
}

// Seed 000 Table 2, with beta read as seconds per byte: bandwidth_Bps = 1 / beta.
TEST(PlatformsCatalog, Table2Links) {
  struct Row {
    const char* name;
    double alpha_s;
    double beta_s_per_byte;
  };
  for (const Row& row : {Row{"ib-fdr-56", 0.7e-6, 0.2e-9}, Row{"ib-qdr-40", 1.2e-6, 0.3e-9},
                         Row{"ethernet-10g-ne020", 7.2e-6, 0.9e-9}}) {
    SCOPED_TRACE(row.name);
    const Link link = catalog_link(row.name);
    EXPECT_DOUBLE_EQ(link.latency_s, row.alpha_s);
    EXPECT_NEAR(1.0 / link.bandwidth_Bps, row.beta_s_per_byte, 1e-9 * row.beta_s_per_byte);
  }
}

TEST(PlatformsCatalog, SeedGpuClusters) {
  const Platform k80 = catalog_platform("k80-cluster");
  EXPECT_EQ(k80.nodes.count, 16);
  EXPECT_EQ(k80.nodes.devices_per_node(), 4);  // 2 boards x 2 GK210
  const auto& k80_tree = std::get<PcieTree>(k80.nodes.intra_node);
  ASSERT_EQ(k80_tree.switches.size(), 2u);
  EXPECT_EQ(k80_tree.switches[0].lanes, 48);
  EXPECT_EQ(k80_tree.switches[0].devices, 2);
  EXPECT_DOUBLE_EQ(k80_tree.switches[0].uplink.bandwidth_Bps, 15.75e9);
  EXPECT_DOUBLE_EQ(k80.network.link.latency_s, catalog_link("ib-fdr-56").latency_s);

  const Platform m40 = catalog_platform("m40-cluster");
  EXPECT_EQ(m40.nodes.count, 4);
  EXPECT_EQ(m40.nodes.devices_per_node(), 8);
  const auto& m40_tree = std::get<PcieTree>(m40.nodes.intra_node);
  ASSERT_EQ(m40_tree.switches.size(), 2u);
  EXPECT_EQ(m40_tree.switches[0].lanes, 96);
  EXPECT_EQ(m40_tree.switches[0].devices, 4);
  EXPECT_NEAR(m40.nodes.peak_flops_per_node(), 960e9 + 8 * 6.844e12, 1e9);
}

TEST(PlatformsCatalog, GpuClusterBuilderMakesNTimesGDevices) {
  const Platform platform = make_gpu_cluster(3, 5, "ib-qdr-40");
  EXPECT_EQ(platform.nodes.count, 3);
  EXPECT_EQ(platform.nodes.devices_per_node(), 5);
  EXPECT_EQ(platform.nodes.count * platform.nodes.devices_per_node(), 15);
  const auto& tree = std::get<PcieTree>(platform.nodes.intra_node);
  ASSERT_EQ(tree.switches.size(), 2u);  // the M40 node's switches hold 4 GPUs each: 4 + 1
  EXPECT_EQ(tree.switches[0].devices, 4);
  EXPECT_EQ(tree.switches[1].devices, 1);
  EXPECT_EQ(platform.network.topology.kind(), TopologyKind::kStar);
  EXPECT_DOUBLE_EQ(platform.network.link.latency_s, 1.2e-6);
  EXPECT_EQ(platform.name, "gpu-cluster-3x5-ib-qdr-40");
  EXPECT_NE(platform.nodes.sources.at("count").find("make_gpu_cluster"), std::string::npos);

  const Platform k80 = make_gpu_cluster(2, 3, catalog_link("ib-fdr-56"), "k80-cluster");
  EXPECT_EQ(k80.nodes.count * k80.nodes.devices_per_node(), 6);
  EXPECT_EQ(std::get<PcieTree>(k80.nodes.intra_node).switches.size(), 2u);  // 2 GK210 per PEX 8747: 2 + 1
  EXPECT_EQ(k80.nodes.devices.front().model, "NVIDIA Tesla K80 (one GK210 GPU)");

  const Platform big = make_gpu_cluster(1, 64, "ethernet-10g-ne020");
  EXPECT_EQ(big.nodes.devices_per_node(), 64);
}

TEST(PlatformsCatalog, GpuClusterBuilderRejectsBadInput) {
  EXPECT_THROW(make_gpu_cluster(0, 4, "ib-fdr-56"), InputError);
  EXPECT_THROW(make_gpu_cluster(2, 0, "ib-fdr-56"), InputError);
  EXPECT_THROW(make_gpu_cluster(2, 4, "no-such-link"), UnknownNameError);
  try {
    make_gpu_cluster(2, 4, "ib-fdr-56", "cori-knl");
    FAIL() << "built a GPU cluster from a CPU-only node";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no GPUs"), std::string::npos) << error.what();
  }
  Link unsourced = catalog_link("ib-fdr-56");
  unsourced.sources.clear();
  try {
    make_gpu_cluster(2, 4, unsourced);
    FAIL() << "accepted a link without sources";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("/network/link/bandwidth_Bps: number without a source"), std::string::npos)
        << error.what();
  }
}

TEST(PlatformsCatalog, UnknownNameListsValidNames) {
  const std::string message = testing::error_of<UnknownNameError>([] { catalog_platform("cori"); });
  EXPECT_NE(message.find("unknown platform 'cori'"), std::string::npos) << message;
  EXPECT_NE(message.find("cori-haswell, cori-knl, cori-knl-snc4, dgx-a100-ib, dgx-h100, dgx1-ib, k20-10gbe, k20-1gbe, "
                         "k80-cluster, k80-dmath, knl-aries-10m, knl-aries-1m, m40-cluster, p100-roce-25g, selene"),
            std::string::npos)
      << message;
  EXPECT_THROW(catalog_platform("ib-fdr-56"), UnknownNameError);  // a link, not a platform
  EXPECT_THROW(catalog_link("cori-knl"), UnknownNameError);
}

TEST(PlatformsCatalog, LoadPlatformTakesNameOrPath) {
  EXPECT_EQ(load_platform("k80-cluster").name, "k80-cluster");
  EXPECT_EQ(load_platform(data_dir() + "/minimal.json").name, "minimal");
  EXPECT_THROW(load_platform("missing.json"), InputError);  // ends in .json: a path, not a name
  EXPECT_THROW(load_platform("missing"), UnknownNameError);
}

TEST(PlatformsCatalog, SummaryRows) {
  const auto rows = catalog_summaries();
  ASSERT_EQ(rows.size(), catalog_names().size());
  const auto knl = std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.name == "cori-knl"; });
  ASSERT_NE(knl, rows.end());
  EXPECT_EQ(knl->nodes, 6144);
  EXPECT_EQ(knl->cores_per_node, 68);
  EXPECT_EQ(knl->total_cores, 6144 * 68);
  EXPECT_EQ(knl->devices_per_node, 0);
  EXPECT_NEAR(knl->peak_flops_per_node, 6.0928e12, 1e9);
  EXPECT_EQ(knl->topology, "dragonfly");
  EXPECT_DOUBLE_EQ(knl->latency_s, 1.3e-6);
  EXPECT_DOUBLE_EQ(knl->bandwidth_Bps, 8e9);
}

}  // namespace
}  // namespace dsgd::platforms
