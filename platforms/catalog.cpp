#include "platforms/catalog.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "platforms/catalog_embedded.hpp"

namespace dsgd::platforms {

namespace {

using dsgd::EmbeddedFile;

const EmbeddedFile* find_file(std::string_view name) {
  for (const auto& file : detail::embedded_catalog()) {
    if (file.name == name) return &file;
  }
  return nullptr;
}

Json parse_file(const EmbeddedFile& file) { return parse_json(file.text, std::string(file.source)); }

// Entries are told apart by their `schema` tag, so a file's kind lives in the file and not in a second list.
std::vector<std::string> names_with_schema(std::string_view schema) {
  std::vector<std::string> names;
  for (const auto& file : detail::embedded_catalog()) {
    const Json json = parse_file(file);
    const auto tag = json.find("schema");
    if (tag != json.end() && tag->is_string() && tag->get<std::string>() == schema) names.emplace_back(file.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

const EmbeddedFile& file_with_schema(std::string_view name, std::string_view schema, std::string_view kind) {
  const std::vector<std::string> valid = names_with_schema(schema);
  const EmbeddedFile* file = find_file(name);
  if (file == nullptr || std::find(valid.begin(), valid.end(), name) == valid.end()) {
    throw UnknownNameError(kind, name, valid);
  }
  return *file;
}

std::string count_text(int value) { return std::to_string(value); }

}  // namespace

std::vector<std::string> catalog_names() { return names_with_schema(kPlatformSchema); }

std::vector<std::string> catalog_link_names() { return names_with_schema(kLinkSchema); }

Platform catalog_platform(std::string_view name) {
  const EmbeddedFile& file = file_with_schema(name, kPlatformSchema, "platform");
  return parse_platform(parse_file(file), std::string(file.source));
}

Link catalog_link(std::string_view name) {
  const EmbeddedFile& file = file_with_schema(name, kLinkSchema, "link");
  return parse_link(parse_file(file), std::string(file.source));
}

std::string catalog_text(std::string_view name) {
  if (const EmbeddedFile* file = find_file(name)) return std::string(file->text);
  std::vector<std::string> valid;
  for (const auto& file : detail::embedded_catalog()) valid.emplace_back(file.name);
  std::sort(valid.begin(), valid.end());
  throw UnknownNameError("platform or link", name, valid);
}

Platform load_platform(std::string_view name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".json");
  if (is_path) return read_platform_file(std::filesystem::path(name_or_path));
  return catalog_platform(name_or_path);
}

Platform make_gpu_cluster(int servers, int gpus_per_server, const Link& link, std::string_view node_template) {
  const std::string origin = "make_gpu_cluster(servers=" + count_text(servers) +
                             ", gpus_per_server=" + count_text(gpus_per_server) + ", link=" + link.name +
                             ", node_template=" + std::string(node_template) + ")";
  if (servers < 1) throw InputError(origin + ": servers must be at least 1");
  if (gpus_per_server < 1) throw InputError(origin + ": gpus_per_server must be at least 1");

  const Platform base = catalog_platform(node_template);
  const auto* base_tree = std::get_if<PcieTree>(&base.nodes.intra_node);
  if (base.nodes.devices.empty() || base_tree == nullptr) {
    throw InputError(origin + ": node template '" + std::string(node_template) +
                     "' has no GPUs behind a PCIe tree; use a GPU platform such as k80-cluster or m40-cluster");
  }

  Platform platform;
  platform.name = "gpu-cluster-" + count_text(servers) + "x" + count_text(gpus_per_server) + "-" + link.name;
  platform.description = count_text(servers) + " servers x " + count_text(gpus_per_server) + " " +
                         base.nodes.devices.front().model + " on " + link.name + " (nodes as in " + base.name +
                         ", built by make_gpu_cluster)";

  Nodes& nodes = platform.nodes;
  nodes = base.nodes;
  nodes.count = servers;
  nodes.sources["count"] = origin;
  DeviceGroup gpu = base.nodes.devices.front();
  gpu.count = gpus_per_server;
  gpu.sources["count"] = origin;
  nodes.devices = {gpu};
  // The template's NVLinks and NICs are wired for its own device count; the built servers have PCIe only.
  nodes.nvlink.reset();
  nodes.nvswitch.reset();
  nodes.nics.reset();

  // Keep the template's way of attaching GPUs: its first switch model with at most as many GPUs per switch as
  // the template has, or GPUs straight on the root complex if the template has no switch. The root complex's
  // lane count is dropped: a real server with more GPUs than the template has more lanes or more switches.
  PcieTree tree;
  tree.sources = base_tree->sources;
  tree.sources.erase("host_lanes");
  const auto with_devices = std::find_if(base_tree->switches.begin(), base_tree->switches.end(),
                                         [](const PcieSwitch& sw) { return sw.devices > 0 && sw.parent == "host"; });
  if (with_devices != base_tree->switches.end()) {
    const int per_switch = with_devices->devices;
    for (int first = 0, index = 0; first < gpus_per_server; first += per_switch, ++index) {
      PcieSwitch sw = *with_devices;
      sw.name = "switch-" + count_text(index);
      sw.devices = std::min(per_switch, gpus_per_server - first);
      sw.sources["devices"] = origin + ": at most " + count_text(per_switch) + " GPUs per switch, as in " + base.name;
      tree.switches.push_back(std::move(sw));
    }
  } else if (base_tree->host_devices > 0) {
    tree.host_devices = gpus_per_server;
    tree.host_device_link = base_tree->host_device_link;
    tree.sources["host_devices"] = origin;
  } else {
    throw InputError(origin + ": node template '" + std::string(node_template) + "' attaches no GPU in its PCIe tree");
  }
  nodes.intra_node = std::move(tree);

  platform.network.link = link;
  platform.network.topology.shape = StarTopology{};
  platform.network.topology.sources["kind"] = origin + ": one switch";
  platform.noise.description = "built by make_gpu_cluster: no measured spread of compute times";

  // Validate like a file, so a builder bug or a link without sources is reported the same way.
  return parse_platform(to_json(platform), origin);
}

Platform make_gpu_cluster(int servers, int gpus_per_server, std::string_view link_name,
                          std::string_view node_template) {
  return make_gpu_cluster(servers, gpus_per_server, catalog_link(link_name), node_template);
}

PlatformSummary summarize(const Platform& platform) {
  PlatformSummary row;
  row.name = platform.name;
  row.description = platform.description;
  row.nodes = platform.nodes.count;
  row.cores_per_node = platform.nodes.cpu.cores();
  row.total_cores = std::int64_t{row.nodes} * row.cores_per_node;
  row.devices_per_node = platform.nodes.devices_per_node();
  row.peak_flops_per_node = platform.nodes.peak_flops_per_node();
  row.topology = std::string(to_string(platform.network.topology.kind()));
  row.latency_s = platform.network.link.latency_s;
  row.bandwidth_Bps = platform.network.link.bandwidth_Bps;
  return row;
}

std::vector<PlatformSummary> catalog_summaries() {
  std::vector<PlatformSummary> rows;
  for (const auto& name : catalog_names()) rows.push_back(summarize(catalog_platform(name)));
  return rows;
}

}  // namespace dsgd::platforms
