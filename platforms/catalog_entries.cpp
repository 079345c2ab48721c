#include "platforms/catalog_entries.hpp"

#include <variant>

namespace dsgd::platforms {

namespace {

// What joins a node's parts: its mesh and cluster mode, or its PCIe tree, the devices' own links and the NICs.
std::string intra_node_text(const Platform& platform) {
  const auto& intra = platform.nodes.intra_node;
  if (const auto* mesh = std::get_if<KnlMesh>(&intra)) {
    return "2-D mesh " + std::to_string(mesh->columns) + "×" + std::to_string(mesh->rows) + ", " +
           std::string(to_string(mesh->cluster_mode));
  }
  std::string text;
  if (const auto* tree = std::get_if<PcieTree>(&intra)) {
    text = "PCIe tree, " + std::to_string(tree->switches.size()) + " switch(es)";
  }
  const auto add = [&text](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (platform.nodes.nvlink) add("NVLink " + std::to_string(platform.nodes.nvlink->pairs.size()) + " pairs");
  if (platform.nodes.nvswitch) add("NVSwitch");
  if (platform.nodes.nics) add(std::to_string(platform.nodes.nics->count) + " NICs");
  return text.empty() ? "—" : text;
}

}  // namespace

reports::Entry to_entry(const Platform& platform) {
  const auto summary = summarize(platform);
  reports::Entry entry = reports::catalog_entry(summary.name, "platform", summary.description);
  entry.platform = summary.name;
  const std::string shape = simgrid_topology_string(platform.network.topology);
  entry.labels["topology"] = shape.empty() ? summary.topology : summary.topology + " " + shape;
  entry.labels["intra_node"] = intra_node_text(platform);
  entry.counters = {{"nodes", summary.nodes},
                    {"cores_per_node", summary.cores_per_node},
                    {"total_cores", static_cast<double>(summary.total_cores)},
                    {"devices_per_node", summary.devices_per_node},
                    {"peak_flops_per_node", summary.peak_flops_per_node},
                    {"latency_s", summary.latency_s},
                    {"bandwidth_Bps", summary.bandwidth_Bps}};
  return entry;
}

reports::Entry to_entry(const Link& link) {
  reports::Entry entry = reports::catalog_entry(link.name, "link", link.description);
  entry.counters = {
      {"latency_s", link.latency_s}, {"bandwidth_Bps", link.bandwidth_Bps}, {"beta_s_per_B", 1.0 / link.bandwidth_Bps}};
  return entry;
}

}  // namespace dsgd::platforms
