// The platform loader: what it accepts, and that every rejection is one line naming the file, the position
// (line:column or JSON path) and what was expected.
#include "platforms/loader.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::platforms {
namespace {

std::string data_dir() { return std::string(DSGD_TEST_DATA_DIR) + "/platforms"; }

Json minimal() { return read_json_file(data_dir() + "/minimal.json"); }
Json catalog_json(std::string_view name) { return parse_json(catalog_text(name), std::string(name)); }
Json::json_pointer ptr(const std::string& path) { return Json::json_pointer(path); }

// The message of the InputError that parsing `json` throws, checked to hold `lines` errors, one a line, each naming
// the file, and to contain `parts`.
std::string rejection(const Json& json, const std::vector<std::string_view>& parts, std::size_t lines = 1) {
  std::string message;
  try {
    parse_platform(json, "test.json");
    ADD_FAILURE() << "accepted: " << json.dump();
    return "";
  } catch (const InputError& error) {
    message = error.what();
  }
  std::istringstream stream(message);
  std::size_t count = 0;
  for (std::string line; std::getline(stream, line); ++count) {
    EXPECT_EQ(line.rfind("test.json: ", 0), 0u) << "does not start with the file name: " << line;
  }
  EXPECT_EQ(count, lines) << "errors, one a line: " << message;
  for (const auto part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
  return message;
}

TEST(PlatformsLoader, ListsEveryErrorOfAFileInOneRun) {
  // Four mistakes in three parts of a file: each is reported, one a line, and none that only follows from another
  // (no "source for 'clock_Hz', which is not a field" after the missing clock).
  Json json = read_json_file(data_dir() + "/gpu8-10gbe.json");
  json["nodes"]["cpu"].erase("clock_Hz");
  json["nodes"]["devices"][0]["peak_flops"] = 494.7;  // TFLOP/s written where FLOP/s is meant
  auto& link = json["network"]["link"];
  link["bandwith_Bps"] = link["bandwidth_Bps"];
  link.erase("bandwidth_Bps");
  const std::string message =
      rejection(json,
                {"test.json: /nodes/cpu: missing required field 'clock_Hz'", "/nodes/devices/0/peak_flops", "TFLOP/s",
                 "/network/link: unknown field 'bandwith_Bps'; did you mean 'bandwidth_Bps'?",
                 "/network/link: missing required field 'bandwidth_Bps'"},
                4);
  EXPECT_EQ(message.find("which is not a field"), std::string::npos) << message;
}

TEST(PlatformsLoader, AcceptsMinimalFile) {
  const Platform platform = read_platform_file(data_dir() + "/minimal.json");
  EXPECT_EQ(platform.name, "minimal");
  EXPECT_EQ(platform.nodes.count, 8);
  EXPECT_EQ(platform.nodes.cpu.cores(), 4);
  EXPECT_EQ(platform.network.topology.kind(), TopologyKind::kStar);
  EXPECT_FALSE(topology_capacity(platform.network.topology).has_value());
  EXPECT_EQ(platform.noise.distribution, NoiseDistribution::kNone);  // noise is optional
  EXPECT_TRUE(std::holds_alternative<std::monostate>(platform.nodes.intra_node));
}

TEST(PlatformsLoader, ACpusDatagramRateLoadsRoundTripsAndNeedsASource) {
  Json json = minimal();
  json["nodes"]["cpu"]["datagram_Bps"] = 1.5e9;
  json["nodes"]["cpu"]["sources"]["datagram_Bps"] = "test";
  const Platform platform = parse_platform(json, "test.json");
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.datagram_Bps, 1.5e9);
  EXPECT_EQ(to_json(parse_platform(to_json(platform), "test.json")), to_json(platform));
  EXPECT_DOUBLE_EQ(read_platform_file(data_dir() + "/minimal.json").nodes.cpu.datagram_Bps, 0) << "absent: free";
  json["nodes"]["cpu"]["datagram_Bps"] = 0;
  rejection(json, {"/nodes/cpu/datagram_Bps"});
  json["nodes"]["cpu"]["datagram_Bps"] = 1.5e9;
  json["nodes"]["cpu"]["sources"].erase("datagram_Bps");
  rejection(json, {"/nodes/cpu/datagram_Bps", "source"});
}

TEST(PlatformsLoader, SyntaxErrorNamesFileLineAndColumn) {
  const std::string path = data_dir() + "/syntax_error.json";
  try {
    read_platform_file(path);
    FAIL() << "accepted a malformed file";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    // The missing comma is noticed at the next member, line 5.
    EXPECT_TRUE(std::regex_search(message, std::regex(R"(syntax_error\.json:5:[0-9]+: JSON syntax error)"))) << message;
  }
}

TEST(PlatformsLoader, SyntaxErrorInTextNamesSource) {
  try {
    parse_platform_text("{\n  \"name\": ,\n}", "inline.json");
    FAIL() << "accepted malformed text";
  } catch (const InputError& error) {
    EXPECT_TRUE(std::regex_search(std::string(error.what()), std::regex(R"(^inline\.json:2:[0-9]+: )")))
        << error.what();
  }
}

// One edit of a valid file -- the value at a JSON path set, or erased where no value is given -- and what the
// rejection names. Each is its own test, named by `test`.
struct BadEdit {
  std::string test;
  bool cori_knl;  // the catalog's cori-knl, else minimal.json
  std::string path;
  std::optional<Json> value;
  std::vector<std::string_view> parts;
};

const std::vector<BadEdit>& bad_edits() {
  static const std::vector<BadEdit> edits = {
      {"MissingFieldNamesJsonPath",
       false,
       "/nodes/cpu/clock_Hz",
       {},
       {"/nodes/cpu", "missing required field 'clock_Hz'"}},
      {"WrongTypeNamesExpectedType",
       false,
       "/nodes/cpu/clock_Hz",
       "fast",
       {"/nodes/cpu/clock_Hz", "expected a number", "string"}},
      {"NegativeBandwidthRejected",
       false,
       "/network/link/bandwidth_Bps",
       -5e9,
       {"/network/link/bandwidth_Bps", "expected a positive number"}},
      {"ZeroMemoryBandwidthRejected",
       true,
       "/nodes/memories/0/bandwidth_Bps",
       0,
       {"/nodes/memories/0/bandwidth_Bps", "positive"}},
      // The typo the check exists for.
      {"UnknownFieldRejected",
       false,
       "/network/link/bandwith_Bps",
       1e9,
       {"/network/link", "unknown field 'bandwith_Bps'", "bandwidth_Bps"}},
      {"NumberWithoutSourceRejected",
       false,
       "/nodes/cpu/sources/clock_Hz",
       {},
       {"/nodes/cpu/clock_Hz", "number without a source", "/nodes/cpu/sources"}},
      {"NumberArrayWithoutSourceRejected",
       true,
       "/nodes/intra_node/controllers/sources/mcdram",
       {},
       {"/nodes/intra_node/controllers/mcdram", "number without a source"}},
      {"ObjectWithoutSourcesMapRejected",
       false,
       "/network/link/sources",
       {},
       {"/network/link/", "number without a source"}},
      {"EmptySourceRejected", false, "/nodes/sources/count", "", {"/nodes/sources/count", "non-empty source"}},
      {"SourceOfAbsentFieldRejected",
       false,
       "/nodes/cpu/sources/turbo_Hz",
       "someone's blog",
       {"/nodes/cpu/sources/turbo_Hz", "not a field of /nodes/cpu"}},
      // Half of 4 x 2e9 x 32.
      {"PeakInconsistentWithCoresAndClockRejected",
       false,
       "/nodes/cpu/peak_flops",
       128e9,
       {"/nodes/cpu/peak_flops", "disagrees", "2.56e+11"}},
      // Issue 42: 2147483647 cores per socket overflowed to a negative peak.
      {"CoresPerNodeBeyondABoundRejected",
       false,
       "/nodes/cpu/cores_per_socket",
       2147483647,
       {"/nodes/cpu/cores_per_socket", "cores per node, more than 1048576"}},
      {"NodesBeyondTopologyCapacityRejected",
       true,
       "/nodes/count",
       9688,
       {"/network/topology", "holds 6144 nodes", "9688"}},
  };
  return edits;
}

class PlatformsLoaderRejects : public ::testing::TestWithParam<std::size_t> {};

TEST_P(PlatformsLoaderRejects, TheEdit) {
  const BadEdit& edit = bad_edits().at(GetParam());
  Json json = edit.cori_knl ? catalog_json("cori-knl") : minimal();
  if (edit.value) {
    json[ptr(edit.path)] = *edit.value;
  } else {
    ASSERT_EQ(json[ptr(edit.path).parent_pointer()].erase(ptr(edit.path).back()), 1U) << edit.path << " is absent";
  }
  rejection(json, edit.parts);
}

INSTANTIATE_TEST_SUITE_P(Edits, PlatformsLoaderRejects, ::testing::Range(std::size_t{0}, bad_edits().size()),
                         [](const auto& param_info) { return bad_edits().at(param_info.param).test; });

// A quantity written in the wrong prefixed unit (a GPU's peak in TFLOP/s, a latency in microseconds, a bandwidth
// in GB/s) is refused with the slips that would make it sensible.
TEST(PlatformsLoader, AQuantityOutOfItsRangeNamesTheLikelyUnitSlip) {
  Json json = catalog_json("m40-cluster");
  json[ptr("/nodes/devices/0/peak_flops")] = 494.7;
  rejection(json, {"/nodes/devices/0/peak_flops", "expected a peak in FLOP/s, between 1e9 and 1e17, got 494.7",
                   "written in GFLOP/s (4.947e+11) or TFLOP/s (4.947e+14)?"});
  json = catalog_json("m40-cluster");
  json[ptr("/network/link/latency_s")] = 2.5;
  rejection(json, {"/network/link/latency_s", "expected a latency in seconds, at most 1 s, got 2.5 s", "ms (0.0025)",
                   "\u00b5s (2.5e-06)", "ns (2.5e-09)"});
  json = catalog_json("m40-cluster");
  json[ptr("/network/link/bandwidth_Bps")] = 12.5;
  rejection(json, {"/network/link/bandwidth_Bps", "got 12.5; written in MB/s (1.25e+07) or GB/s (1.25e+10)"});
}

// A processor that computes with no kernel efficiency, kernel model or profile runs at its full peak: said, once.
TEST(PlatformsLoader, AComputingProcessorWithoutAnEfficiencyIsWarnedOf) {
  const auto warnings = platform_warnings(parse_platform(catalog_json("m40-cluster"), "m40-cluster"));
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("m40-cluster: device 'NVIDIA Tesla M40' has no kernel_efficiency, kernels or "
                             "kernel_profile: its kernels run at its full peak (6.844e+12 FLOP/s)"),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(platform_warnings(parse_platform(catalog_json("dgx1-ib"), "dgx1-ib")).empty()) << "a kernel model";
  EXPECT_EQ(platform_warnings(parse_platform(catalog_json("cori-knl"), "cori-knl")).size(), 1U) << "its CPU computes";
}

TEST(PlatformsLoader, UnknownTopologyListsValidOnes) {
  const std::string message = testing::input_error([] { read_platform_file(data_dir() + "/unknown_topology.json"); });
  EXPECT_NE(message.find("unknown_topology.json: /network/topology/kind"), std::string::npos) << message;
  EXPECT_NE(message.find("'hypercube'"), std::string::npos) << message;
  EXPECT_NE(message.find("star, fat_tree, dragonfly, torus"), std::string::npos) << message;
}

TEST(PlatformsLoader, SourceOfTextFieldAllowed) {
  Json json = minimal();
  json[ptr("/nodes/cpu/sources/model")] = "vendor sheet";
  EXPECT_EQ(parse_platform(json, "test.json").nodes.cpu.sources.at("model"), "vendor sheet");
}

TEST(PlatformsLoader, DragonflyBeyondSimgridsWiringLoads) {
  // Cori's real group count, more than its 16 routers per chassis: a valid description that only SimGrid's
  // dragonfly cannot build (tests/simulate/platform_builder_test.cpp holds that refusal).
  Json json = catalog_json("cori-knl");
  json[ptr("/network/topology/groups")] = 34;
  json[ptr("/nodes/count")] = 64;
  EXPECT_EQ(std::get<DragonflyTopology>(parse_platform(json, "cori34.json").network.topology.shape).groups, 34);
}

TEST(PlatformsLoader, FatTreeAndTorusShapes) {
  Json json = minimal();
  json[ptr("/network/topology")] = {
      {"kind", "fat_tree"},
      {"levels", 2},
      {"down", {4, 2}},
      {"up", {1, 2}},
      {"link_counts", {1, 1}},
      {"sources", {{"levels", "test"}, {"down", "test"}, {"up", "test"}, {"link_counts", "test"}}}};
  const Platform tree = parse_platform(json, "test.json");
  EXPECT_EQ(topology_capacity(tree.network.topology), 8);
  EXPECT_EQ(simgrid_topology_string(tree.network.topology), "2;4,2;1,2;1,1");

  json[ptr("/network/topology/up")] = {1};
  rejection(json, {"/network/topology/up", "expected 2 values"});

  json[ptr("/network/topology")] = {
      {"kind", "torus"}, {"dimensions", {2, 2, 2}}, {"sources", {{"dimensions", "test"}}}};
  const Platform torus = parse_platform(json, "test.json");
  EXPECT_EQ(topology_capacity(torus.network.topology), 8);
  EXPECT_EQ(simgrid_topology_string(torus.network.topology), "2,2,2");

  json[ptr("/network/topology/dimensions")] = {2, 0, 2};
  rejection(json, {"/network/topology/dimensions/1", "positive integer"});
}

TEST(PlatformsLoader, TopologyParameterOfAnotherKindRejected) {
  Json json = minimal();
  json[ptr("/network/topology/groups")] = 4;  // a dragonfly parameter on a star
  rejection(json, {"/network/topology", "unknown field 'groups'"});
}

TEST(PlatformsLoader, PcieBudgetsChecked) {
  Json lanes = catalog_json("m40-cluster");
  lanes[ptr("/nodes/intra_node/switches/0/device_link/lanes")] = 32;  // 16 + 4 x 32 > 96
  rejection(lanes, {"/nodes/intra_node/switches/0/lanes", "needs 144 lanes", "has 96"});

  Json host = catalog_json("m40-cluster");
  host[ptr("/nodes/intra_node/host_lanes")] = 16;  // two x16 uplinks
  rejection(host, {"/nodes/intra_node/host_lanes", "needs 32 lanes"});

  Json count = catalog_json("m40-cluster");
  count[ptr("/nodes/devices/0/count")] = 7;
  rejection(count, {"/nodes/intra_node", "attaches 8 devices but the node has 7"});

  Json parent = catalog_json("m40-cluster");
  parent[ptr("/nodes/intra_node/switches/0/parent")] = "m40-group-1";  // listed after: would allow cycles
  rejection(parent, {"/nodes/intra_node/switches/0/parent", "unknown parent 'm40-group-1'"});
}

TEST(PlatformsLoader, KnlMeshChecked) {
  Json cores = catalog_json("cori-knl");
  cores[ptr("/nodes/intra_node/active_tiles")] = 36;
  rejection(cores, {"/nodes/intra_node/active_tiles", "72", "68 cores"});

  Json outside = catalog_json("cori-knl");
  outside[ptr("/nodes/intra_node/controllers/ddr4/1")] = {6, 3};
  rejection(outside, {"/nodes/intra_node/controllers/ddr4/1", "outside the 6 x 8 mesh"});

  Json mode = catalog_json("cori-knl");
  mode[ptr("/nodes/intra_node/cluster_mode")] = "snc2";
  rejection(mode, {"/nodes/intra_node/cluster_mode", "all2all, quadrant, snc4"});
}

TEST(PlatformsLoader, StragglersLoadRoundTripAndAreChecked) {
  Json json = minimal();
  const int nodes = json["nodes"]["count"].get<int>();
  json["noise"] = {{"distribution", "none"}, {"stragglers", {{{"node", nodes - 1}, {"slowdown", 4}}}}};
  const Platform platform = parse_platform(json, "test.json");
  ASSERT_EQ(platform.noise.stragglers.size(), 1U);
  EXPECT_EQ(platform.noise.stragglers[0].node, nodes - 1);
  EXPECT_DOUBLE_EQ(platform.noise.stragglers[0].slowdown, 4);
  const Platform again = parse_platform(to_json(platform), "again.json");
  ASSERT_EQ(again.noise.stragglers.size(), 1U);
  EXPECT_DOUBLE_EQ(again.noise.stragglers[0].slowdown, 4);

  json["noise"]["stragglers"][0]["node"] = nodes;
  rejection(json, {"/noise/stragglers/0/node", "expected a node from 0 to"});
  json["noise"]["stragglers"] = {{{"node", 0}, {"slowdown", 0}}};
  rejection(json, {"/noise/stragglers/0/slowdown"});
  json["noise"]["stragglers"] = {{{"node", 0}, {"slowdown", 2}}, {{"node", 0}, {"slowdown", 3}}};
  rejection(json, {"/noise/stragglers/1/node", "listed twice"});
  json["noise"]["stragglers"] = {{{"node", 0}, {"slowdown", 2}, {"speed", 3}}};
  rejection(json, {"/noise/stragglers/0", "unknown field 'speed'"});
}

TEST(PlatformsLoader, NoiseDistributions) {
  Json json = minimal();
  json["noise"] = {{"distribution", "lognormal"}, {"sigma", 0.05}, {"sources", {{"sigma", "test"}}}};
  const Platform platform = parse_platform(json, "test.json");
  EXPECT_EQ(platform.noise.distribution, NoiseDistribution::kLognormal);
  EXPECT_DOUBLE_EQ(platform.noise.spread, 0.05);

  EXPECT_EQ(platform.noise.correlation_s, 0) << "independent draws unless a correlation time is given";

  json["noise"] = {{"distribution", "lognormal"},
                   {"sigma", 0.05},
                   {"correlation_s", 0.2},
                   {"sources", {{"sigma", "test"}, {"correlation_s", "test"}}}};
  const Platform persistent = parse_platform(json, "test.json");
  EXPECT_DOUBLE_EQ(persistent.noise.correlation_s, 0.2);
  EXPECT_DOUBLE_EQ(parse_platform(to_json(persistent), "again.json").noise.correlation_s, 0.2) << "written back";
  json["noise"]["correlation_s"] = -1;
  rejection(json, {"/noise/correlation_s"});
  json["noise"] = {{"distribution", "none"}, {"correlation_s", 0.2}, {"sources", {{"correlation_s", "t"}}}};
  rejection(json, {"/noise", "unknown field 'correlation_s'"});

  json["noise"] = {
      {"distribution", "uniform"}, {"relative_half_width", 1.5}, {"sources", {{"relative_half_width", "t"}}}};
  rejection(json, {"/noise/relative_half_width", "below 1"});

  json["noise"] = {{"distribution", "normal"}, {"relative_stddev", 0.1}};
  rejection(json, {"/noise/relative_stddev", "number without a source"});

  json["noise"] = {{"distribution", "normal"}, {"sigma", 0.1}, {"sources", {{"sigma", "t"}}}};
  // Both errors at once: the normal distribution's spread is missing, and sigma is not one of its fields.
  rejection(json, {"/noise", "unknown field 'sigma'", "missing required field 'relative_stddev'"}, 2);

  json["noise"] = {{"distribution", "pareto"}};
  rejection(json, {"/noise/distribution", "none, normal, lognormal, uniform"});
}

// Three segments on the minimal platform's link: eager, rendezvous, and a large-message fit through the origin.
Json segmented() {
  Json json = minimal();
  json[ptr("/network/link/segments")] = {
      {{"min_bytes", 0},
       {"latency_s", 2e-7},
       {"bandwidth_Bps", 3e9},
       {"sources", {{"min_bytes", "t"}, {"latency_s", "t"}, {"bandwidth_Bps", "t"}}}},
      {{"min_bytes", 4044},
       {"latency_s", 1.5e-6},
       {"bandwidth_Bps", 8e9},
       {"sources", {{"min_bytes", "t"}, {"latency_s", "t"}, {"bandwidth_Bps", "t"}}}},
      {{"min_bytes", 4194304},
       {"latency_s", 0},
       {"bandwidth_Bps", 4e9},
       {"sources", {{"min_bytes", "t"}, {"latency_s", "t"}, {"bandwidth_Bps", "t"}}}}};
  return json;
}

TEST(PlatformsLoader, LinkSegmentsPickTheLastSegmentStartingAtOrBelowTheSize) {
  const Link link = parse_platform(segmented(), "test.json").network.link;
  ASSERT_EQ(link.segments.size(), 3u);
  EXPECT_EQ(link.segments[1].min_bytes, 4044);
  EXPECT_EQ(link.segments[2].latency_s, 0);
  EXPECT_EQ(link.segments[1].sources.at("bandwidth_Bps"), "t");
  EXPECT_DOUBLE_EQ(link.latency_s, 1e-6);  // the representative values stay as written
  EXPECT_DOUBLE_EQ(link.bandwidth_Bps, 1e9);
  EXPECT_EQ(link.segment_for(0), &link.segments[0]);
  EXPECT_EQ(link.segment_for(4043), &link.segments[0]);
  EXPECT_EQ(link.segment_for(4044), &link.segments[1]);
  EXPECT_EQ(link.segment_for(4194303), &link.segments[1]);
  EXPECT_EQ(link.segment_for(4194304), &link.segments[2]);
  EXPECT_EQ(link.segment_for(1e12), &link.segments[2]);
  EXPECT_DOUBLE_EQ(link.message_s(1000), 2e-7 + 1000 / 3e9);
  EXPECT_DOUBLE_EQ(link.message_s(1 << 20), 1.5e-6 + (1 << 20) / 8e9);
  EXPECT_DOUBLE_EQ(link.message_s(1 << 24), (1 << 24) / 4e9);
  // Without segments, the link's own pair holds for every size.
  const Link plain = parse_platform(minimal(), "test.json").network.link;
  EXPECT_EQ(plain.segment_for(4096), nullptr);
  EXPECT_DOUBLE_EQ(plain.message_s(1000), 1e-6 + 1000 / 1e9);
}

TEST(PlatformsLoader, LinkSegmentsValidated) {
  Json json = segmented();
  json[ptr("/network/link/segments/0/min_bytes")] = 8;
  rejection(json, {"/network/link/segments/0/min_bytes", "must start at 0 bytes"});

  json = segmented();
  json[ptr("/network/link/segments/2/min_bytes")] = 4044;
  rejection(json, {"/network/link/segments/2/min_bytes", "strictly ascending", "follows 4044"});

  json = segmented();
  json[ptr("/network/link/segments/1/bandwidth_Bps")] = 0;
  rejection(json, {"/network/link/segments/1/bandwidth_Bps", "positive"});

  json = segmented();
  json[ptr("/network/link/segments/1/latency_s")] = -1e-6;
  rejection(json, {"/network/link/segments/1/latency_s", "non-negative"});

  json = segmented();
  json[ptr("/network/link/segments/1/sources")].erase("latency_s");
  rejection(json, {"/network/link/segments/1/latency_s", "number without a source"});

  json = segmented();
  json[ptr("/network/link/segments/1/beta")] = 1e-9;
  rejection(json, {"/network/link/segments/1", "unknown field 'beta'"});

  json = segmented();
  json[ptr("/network/link/segments")] = Json::array();
  rejection(json, {"/network/link/segments", "at least one segment"});

  json = segmented();
  json[ptr("/network/link")].erase("latency_s");  // the representative values stay required
  rejection(json, {"/network/link", "missing required field 'latency_s'"});
}

TEST(PlatformsLoader, LinkSegmentsRoundTrip) {
  const Json once = to_json(parse_platform(segmented(), "test.json"));
  EXPECT_EQ(once[ptr("/network/link/segments/1/min_bytes")].dump(), "4044");  // a byte count, not 4044.0
  EXPECT_EQ(to_json(parse_platform(once, "test.json")), once);

  // A link file (dsgd-link/1) carries segments the same way.
  Json link_file = to_json(catalog_link("ib-fdr-56"));
  link_file["segments"] = segmented()[ptr("/network/link/segments")];
  const Link link = parse_link(link_file, "link.json");
  ASSERT_EQ(link.segments.size(), 3u);
  EXPECT_EQ(link.segments[2].min_bytes, 4194304);
  EXPECT_EQ(to_json(parse_link(to_json(link), "link.json")), to_json(link));
  link_file["segments"][0]["min_bytes"] = 1;
  EXPECT_THROW(parse_link(link_file, "link.json"), InputError);
}

TEST(PlatformsLoader, LinkIsNotAPlatform) {
  rejection(catalog_json("ib-fdr-56"), {"/schema", "link description"});
  EXPECT_THROW(parse_link(catalog_json("cori-knl"), "test.json"), InputError);
}

// The minimal platform's 8 nodes as two chips of 4 nodes on 2 cores each, with rates measured alone.
Json shared_chip() {
  Json json = minimal();
  json[ptr("/nodes/shared_chip")] = {
      {"nodes", 4},
      {"cores", 2},
      {"waiting_share", 0.25},
      {"kernel_efficiency_alone",
       {{"conv", 0.6}, {"copy", 0.3}, {"sources", {{"conv", "alone conv"}, {"copy", "alone copy"}}}}},
      {"sources", {{"nodes", "chip nodes"}, {"cores", "chip cores"}, {"waiting_share", "chip share"}}}};
  return json;
}

TEST(PlatformsLoader, SharedChipLoads) {
  const Platform platform = parse_platform(shared_chip(), "test.json");
  ASSERT_TRUE(platform.nodes.shared_chip.has_value());
  const SharedChip& chip = *platform.nodes.shared_chip;
  EXPECT_EQ(chip.nodes, 4);
  EXPECT_EQ(chip.cores, 2);
  EXPECT_DOUBLE_EQ(chip.waiting_share, 0.25);
  EXPECT_DOUBLE_EQ(chip.alone.of("conv"), 0.6);
  EXPECT_DOUBLE_EQ(chip.alone.of("copy"), 0.3);
  EXPECT_EQ(chip.alone.by_class.count("gemm"), 0U) << "a class not measured alone is not listed";
  EXPECT_EQ(chip.sources.at("cores"), "chip cores");
  EXPECT_EQ(chip.alone.sources.at("conv"), "alone conv");
  EXPECT_FALSE(parse_platform(minimal(), "test.json").nodes.shared_chip.has_value()) << "optional";

  // waiting_share and kernel_efficiency_alone are optional.
  Json bare = shared_chip();
  bare[ptr("/nodes/shared_chip")].erase("waiting_share");
  bare[ptr("/nodes/shared_chip")].erase("kernel_efficiency_alone");
  bare[ptr("/nodes/shared_chip/sources")].erase("waiting_share");
  const SharedChip plain = *parse_platform(bare, "test.json").nodes.shared_chip;
  EXPECT_EQ(plain.waiting_share, 0.0);
  EXPECT_TRUE(plain.alone.by_class.empty());
}

TEST(PlatformsLoader, SharedChipRoundTrips) {
  const Json once = to_json(parse_platform(shared_chip(), "test.json"));
  EXPECT_EQ(once[ptr("/nodes/shared_chip")], shared_chip()[ptr("/nodes/shared_chip")]) << "written as read";
  EXPECT_EQ(once[ptr("/nodes/shared_chip/nodes")].dump(), "4");  // a count, not 4.0
  const Platform again = parse_platform(once, "again.json");
  EXPECT_EQ(to_json(again), once);
  EXPECT_EQ(again.nodes.shared_chip->cores, 2);
  EXPECT_DOUBLE_EQ(again.nodes.shared_chip->alone.of("copy"), 0.3);
  EXPECT_EQ(again.nodes.shared_chip->sources.at("waiting_share"), "chip share");
  EXPECT_EQ(again.nodes.shared_chip->alone.sources.at("copy"), "alone copy");

  // A waiting share of 0 with a source is written back; one never given stays out of the file.
  Json zero = shared_chip();
  zero[ptr("/nodes/shared_chip/waiting_share")] = 0;
  EXPECT_TRUE(to_json(parse_platform(zero, "test.json"))[ptr("/nodes/shared_chip")].contains("waiting_share"));
  zero[ptr("/nodes/shared_chip")].erase("waiting_share");
  zero[ptr("/nodes/shared_chip/sources")].erase("waiting_share");
  EXPECT_FALSE(to_json(parse_platform(zero, "test.json"))[ptr("/nodes/shared_chip")].contains("waiting_share"));
}

TEST(PlatformsLoader, SharedChipValidated) {
  Json json = shared_chip();
  json[ptr("/nodes/shared_chip/sources")].erase("cores");
  rejection(json, {"/nodes/shared_chip/cores", "number without a source", "/nodes/shared_chip/sources"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip/waiting_share")] = 1.5;
  rejection(json, {"/nodes/shared_chip/waiting_share", "in [0, 1]", "1.5"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip/waiting_share")] = -0.1;
  rejection(json, {"/nodes/shared_chip/waiting_share", "in [0, 1]", "-0.1"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip/waiting")] = 0.5;  // a misspelt waiting_share
  rejection(json, {"/nodes/shared_chip", "unknown field 'waiting'", "waiting_share"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip")].erase("cores");
  json[ptr("/nodes/shared_chip/sources")].erase("cores");
  rejection(json, {"/nodes/shared_chip", "missing required field 'cores'"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip/nodes")] = 0;
  rejection(json, {"/nodes/shared_chip/nodes", "positive integer"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip/kernel_efficiency_alone/conv")] = 1.2;
  rejection(json, {"/nodes/shared_chip/kernel_efficiency_alone/conv", "(0, 1]"});

  json = shared_chip();
  json[ptr("/nodes/shared_chip/kernel_efficiency_alone/sources")].erase("copy");
  rejection(json, {"/nodes/shared_chip/kernel_efficiency_alone/copy", "number without a source"});
}

// shared_chip() with a loaded link of two segments.
Json shared_chip_with_loaded_link() {
  Json json = shared_chip();
  json[ptr("/nodes/shared_chip/loaded_link")] = {
      {"name", "loaded"},
      {"latency_s", 2e-5},
      {"bandwidth_Bps", 1e9},
      {"segments",
       {{{"min_bytes", 0},
         {"latency_s", 2e-5},
         {"bandwidth_Bps", 2e9},
         {"sources", {{"latency_s", "s0 alpha"}, {"bandwidth_Bps", "s0 beta"}, {"min_bytes", "s0 from"}}}},
        {{"min_bytes", 65536},
         {"latency_s", 1e-4},
         {"bandwidth_Bps", 1e9},
         {"sources", {{"latency_s", "s1 alpha"}, {"bandwidth_Bps", "s1 beta"}, {"min_bytes", "s1 from"}}}}}},
      {"sources", {{"latency_s", "loaded alpha"}, {"bandwidth_Bps", "loaded beta"}}}};
  return json;
}

TEST(PlatformsLoader, SharedChipLoadedLinkRoundTrips) {
  const Platform platform = parse_platform(shared_chip_with_loaded_link(), "test.json");
  const auto& loaded = platform.nodes.shared_chip->loaded_link;
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->name, "loaded");
  EXPECT_DOUBLE_EQ(loaded->latency_s_for(100), 2e-5);
  EXPECT_DOUBLE_EQ(loaded->bandwidth_Bps_for(1e6), 1e9);
  EXPECT_EQ(loaded->sources.at("bandwidth_Bps"), "loaded beta");
  EXPECT_FALSE(parse_platform(shared_chip(), "test.json").nodes.shared_chip->loaded_link.has_value()) << "optional";
  const Json once = to_json(platform);
  EXPECT_EQ(once[ptr("/nodes/shared_chip/loaded_link")],
            shared_chip_with_loaded_link()[ptr("/nodes/shared_chip/loaded_link")]);
  EXPECT_EQ(to_json(parse_platform(once, "again.json")), once);
  EXPECT_FALSE(to_json(parse_platform(shared_chip(), "test.json"))[ptr("/nodes/shared_chip")].contains("loaded_link"));
}

TEST(PlatformsLoader, SharedChipLoadedLinkValidated) {
  Json json = shared_chip_with_loaded_link();
  json[ptr("/nodes/shared_chip/loaded_link/segments/1/bandwidth_Bps")] = 0;
  rejection(json, {"/nodes/shared_chip/loaded_link/segments/1/bandwidth_Bps"});

  json = shared_chip_with_loaded_link();
  json[ptr("/nodes/shared_chip/loaded_link/sources")].erase("latency_s");
  rejection(json, {"/nodes/shared_chip/loaded_link/latency_s", "number without a source"});

  json = shared_chip_with_loaded_link();
  json[ptr("/nodes/shared_chip/loaded_link/segments/1/min_bytes")] = 0;
  rejection(json, {"/nodes/shared_chip/loaded_link/segments/1/min_bytes", "ascending"});

  json = shared_chip_with_loaded_link();
  json[ptr("/nodes/shared_chip/loaded_link/bandwidth")] = 1e9;  // a misspelt bandwidth_Bps
  rejection(json, {"/nodes/shared_chip/loaded_link", "unknown field 'bandwidth'"});
}

TEST(PlatformsLoader, SharedChipOnlyOnNodesThatAreCores) {
  // A node with devices (and a PCIe tree), and a KNL node with its mesh: their ranks are not single cores.
  for (const auto* name : {"m40-cluster", "cori-knl"}) {
    SCOPED_TRACE(name);
    Json json = catalog_json(name);
    json[ptr("/nodes/shared_chip")] = shared_chip()[ptr("/nodes/shared_chip")];
    rejection(json, {"/nodes/shared_chip", "single CPU cores", "devices or an intra_node"});
  }
}

TEST(PlatformsLoader, RoundTripsThroughJson) {
  for (const auto& name : catalog_names()) {
    SCOPED_TRACE(name);
    const Platform platform = catalog_platform(name);
    const Json once = to_json(platform);
    EXPECT_EQ(to_json(parse_platform(once, name)), once);
  }
  for (const auto& name : catalog_link_names()) {
    const Json once = to_json(catalog_link(name));
    EXPECT_EQ(to_json(parse_link(once, name)), once);
  }
}

}  // namespace
}  // namespace dsgd::platforms
