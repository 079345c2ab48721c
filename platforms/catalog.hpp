#pragma once
// The built-in platform catalog: the JSON files of platforms/catalog/, embedded into the library at build time
// (so the `dsgd` binary needs no data directory), plus a builder for generic GPU clusters.
//
// The catalog holds two kinds of entry: platforms (schema dsgd-platform/1: a whole cluster) and links (schema
// dsgd-link/1: an alpha-beta network such as seed 000 Table 2's InfiniBand and Ethernet, used by
// make_gpu_cluster). Errors in embedded files name them as platforms/catalog/NAME.json.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "platforms/loader.hpp"
#include "platforms/platform.hpp"

namespace dsgd::platforms {

// The catalog platform whose node make_gpu_cluster copies unless told otherwise.
inline constexpr std::string_view kDefaultGpuNodeTemplate = "m40-cluster";

// Names of the catalog's platforms, sorted.
std::vector<std::string> catalog_names();

// Names of the catalog's links (networks), sorted.
std::vector<std::string> catalog_link_names();

// A catalog platform. Throws UnknownNameError listing catalog_names() for an unknown name.
Platform catalog_platform(std::string_view name);

// A catalog link. Throws UnknownNameError listing catalog_link_names() for an unknown name.
Link catalog_link(std::string_view name);

// The JSON text of a catalog platform or link, as written in platforms/catalog/ (for `dsgd platforms show`).
// Throws UnknownNameError listing every entry.
std::string catalog_text(std::string_view name);

// A platform named on a command line: a file if `name_or_path` contains '/' or ends in ".json", else a catalog
// name. Throws InputError for a missing or invalid file or an unknown name, IoError for an unreadable file.
Platform load_platform(std::string_view name_or_path);

// "N servers x G GPUs on link L": `servers` nodes of the catalog platform `node_template` (its CPU, memories and
// GPU model), each with `gpus_per_server` GPUs behind as many of the template's PCIe switches as needed (the
// template's devices per switch), on one switch of `link`. The result is validated like a file and its sources
// name the builder and the template. Throws InputError for counts < 1, a template without GPUs or PCIe tree,
// or an unknown template or link name.
Platform make_gpu_cluster(int servers, int gpus_per_server, const Link& link,
                          std::string_view node_template = kDefaultGpuNodeTemplate);
Platform make_gpu_cluster(int servers, int gpus_per_server, std::string_view link_name,
                          std::string_view node_template = kDefaultGpuNodeTemplate);

// One row of the `dsgd platforms` table.
struct PlatformSummary {
  std::string name;
  std::string description;
  int nodes = 0;
  int cores_per_node = 0;
  std::int64_t total_cores = 0;
  int devices_per_node = 0;
  double peak_flops_per_node = 0;  // CPU + devices, single precision
  std::string topology;            // "dragonfly", "star", ...
  double latency_s = 0;            // alpha of the node link
  double bandwidth_Bps = 0;        // 1 / beta of the node link
};

// The summary row of a platform.
PlatformSummary summarize(const Platform& platform);

// One row per catalog platform, in catalog_names() order.
std::vector<PlatformSummary> catalog_summaries();

}  // namespace dsgd::platforms
