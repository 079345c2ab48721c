#include "platforms/platform.hpp"

#include <numeric>

namespace dsgd::platforms {

namespace {

template <typename Enum>
std::string_view name_of(Enum value, const std::vector<std::string>& names) {
  return names.at(static_cast<std::size_t>(value));
}

std::string join_ints(const std::vector<int>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out;
}

std::int64_t product(const std::vector<int>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{1}, [](std::int64_t a, int b) { return a * b; });
}

}  // namespace

// The name lists are indexed by the enums' values: keep them in declaration order.
const std::vector<std::string>& cluster_mode_names() {
  static const std::vector<std::string> names = {"all2all", "quadrant", "snc4"};
  return names;
}
const std::vector<std::string>& mcdram_mode_names() {
  static const std::vector<std::string> names = {"cache", "flat", "hybrid"};
  return names;
}
const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> names = {"star", "fat_tree", "dragonfly", "torus"};
  return names;
}
const std::vector<std::string>& noise_distribution_names() {
  static const std::vector<std::string> names = {"none", "normal", "lognormal", "uniform"};
  return names;
}

std::string_view to_string(ClusterMode mode) { return name_of(mode, cluster_mode_names()); }
std::string_view to_string(McdramMode mode) { return name_of(mode, mcdram_mode_names()); }
std::string_view to_string(TopologyKind kind) { return name_of(kind, topology_names()); }
std::string_view to_string(NoiseDistribution distribution) { return name_of(distribution, noise_distribution_names()); }

int Nodes::devices_per_node() const {
  int total = 0;
  for (const auto& group : devices) total += group.count;
  return total;
}

std::uint64_t Nodes::device_memory_bytes() const {
  std::uint64_t smallest = 0;
  for (const auto& group : devices) {
    if (!group.memory.size_bytes || group.count == 0) continue;
    const auto bytes = static_cast<std::uint64_t>(*group.memory.size_bytes);
    if (smallest == 0 || bytes < smallest) smallest = bytes;
  }
  return smallest;
}

int Nics::nic_of_device(int device) const {
  for (std::size_t nic = 0; nic < devices.size(); ++nic) {
    for (const int served : devices[nic]) {
      if (served == device) return static_cast<int>(nic);
    }
  }
  return 0;
}

double KernelEfficiency::of(std::string_view kernel_class) const {
  const auto found = by_class.find(std::string(kernel_class));
  return found == by_class.end() ? 1.0 : found->second;
}

const std::vector<std::string>& kernel_class_names() {
  static const std::vector<std::string> names = {"conv", "gemm", "elementwise", "copy"};
  return names;
}

double Nodes::peak_flops_per_node() const {
  double total = cpu.peak_flops;
  for (const auto& group : devices) total += group.count * group.peak_flops;
  return total;
}

std::optional<std::int64_t> topology_capacity(const Topology& topology) {
  if (const auto* tree = std::get_if<FatTreeTopology>(&topology.shape)) return product(tree->down);
  if (const auto* fly = std::get_if<DragonflyTopology>(&topology.shape)) {
    return std::int64_t{fly->groups} * fly->chassis_per_group * fly->routers_per_chassis * fly->nodes_per_router;
  }
  if (const auto* torus = std::get_if<TorusTopology>(&topology.shape)) return product(torus->dimensions);
  return std::nullopt;
}

std::string simgrid_topology_string(const Topology& topology) {
  if (const auto* tree = std::get_if<FatTreeTopology>(&topology.shape)) {
    return std::to_string(tree->down.size()) + ";" + join_ints(tree->down) + ";" + join_ints(tree->up) + ";" +
           join_ints(tree->link_counts);
  }
  if (const auto* fly = std::get_if<DragonflyTopology>(&topology.shape)) {
    return join_ints({fly->groups, fly->group_links}) + ";" + join_ints({fly->chassis_per_group, fly->chassis_links}) +
           ";" + join_ints({fly->routers_per_chassis, fly->router_links}) + ";" + std::to_string(fly->nodes_per_router);
  }
  if (const auto* torus = std::get_if<TorusTopology>(&topology.shape)) return join_ints(torus->dimensions);
  return "";
}

EfficiencyBasis efficiency_basis(const KernelModel& model) {
  constexpr std::string_view kFitted = "FITTED: ";
  const auto source = model.sources.find("efficiency");
  if (source == model.sources.end()) return {"the platform's value", false};
  if (!source->second.starts_with(kFitted)) return {source->second, false};
  return {source->second.substr(kFitted.size()), true};
}

}  // namespace dsgd::platforms
