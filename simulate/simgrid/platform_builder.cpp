#include "simulate/simgrid/platform_builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <string>
#include <tuple>
#include <unordered_set>

namespace dsgd::simulate {

namespace s4u = ::simgrid::s4u;
using ::simgrid::kernel::routing::NetPoint;

namespace {

std::string quoted(const platforms::Platform& platform) {
  return "platform '" + (platform.name.empty() ? std::string("(unnamed)") : platform.name) + "'";
}

const platforms::KnlMesh* mesh_of(const platforms::Platform& platform) {
  return std::get_if<platforms::KnlMesh>(&platform.nodes.intra_node);
}

const platforms::PcieTree* tree_of(const platforms::Platform& platform) {
  return std::get_if<platforms::PcieTree>(&platform.nodes.intra_node);
}

// Compute units of one node: cores of a mesh, devices, or the node.
int units_per_node(const platforms::Platform& platform) {
  if (mesh_of(platform) != nullptr) return platform.nodes.cpu.cores();
  const int devices = platform.nodes.devices_per_node();
  return devices > 0 ? devices : 1;
}

double fastest_memory_Bps(const platforms::Platform& platform) {
  double fastest = 0;
  for (const auto& memory : platform.nodes.memories) fastest = std::max(fastest, memory.bandwidth_Bps);
  return fastest;
}

// The device group of device `device` of a node.
const platforms::DeviceGroup& device_group(const platforms::Platform& platform, int device) {
  int first = 0;
  for (const auto& group : platform.nodes.devices) {
    if (device < first + group.count) return group;
    first += group.count;
  }
  throw InternalError("device " + std::to_string(device) + " beyond the node's devices");
}

// Which unit of which node rank `rank` takes: node, index of the unit (or of the core group) on the node; -1 for
// the CPU of a master on the host.
struct Slot {
  int node = 0;
  int index = 0;
};

Slot slot_of(const platforms::Platform& platform, int rank, const PlacementOptions& placement) {
  if (placement.master_on_host) {
    if (rank < placement.host_ranks) return {rank, -1};
    rank -= placement.host_ranks;
  }
  const int per_node = ranks_per_node(platform, placement);
  return {rank / per_node, rank % per_node};
}

// --- the mesh of a KNL node ------------------------------------------------------------------------------------

// Stops of the tiles, in tile order: the stops the controllers leave, row-major.
std::vector<platforms::MeshStop> tile_stops(const platforms::KnlMesh& mesh) {
  std::vector<platforms::MeshStop> stops;
  for (int y = 0; y < mesh.rows; ++y) {
    for (int x = 0; x < mesh.columns; ++x) {
      const platforms::MeshStop stop{x, y};
      const auto taken = [&](const std::vector<platforms::MeshStop>& list) {
        return std::find(list.begin(), list.end(), stop) != list.end();
      };
      if (!taken(mesh.mcdram_controllers) && !taken(mesh.ddr_controllers)) stops.push_back(stop);
    }
  }
  stops.resize(static_cast<std::size_t>(mesh.physical_tiles));
  return stops;
}

// Cores [first, last] of group `index` of `groups` on a chip of `cores`.
std::pair<int, int> group_cores(int cores, int groups, int index) {
  return {index * cores / groups, (index + 1) * cores / groups - 1};
}

int quadrant(const platforms::KnlMesh& mesh, const platforms::MeshStop& stop) {
  return (stop.x * 2 >= mesh.columns ? 1 : 0) + (stop.y * 2 >= mesh.rows ? 2 : 0);
}

}  // namespace

double device_link_Bps(const platforms::Platform& platform, int device) {
  const auto* tree = tree_of(platform);
  if (tree == nullptr) return 0;
  const PcieLayout layout = pcie_layout(*tree);
  if (device >= static_cast<int>(layout.device_element.size())) return 0;
  return layout.elements[static_cast<std::size_t>(layout.device_element[static_cast<std::size_t>(device)])]
      .link->bandwidth_Bps;
}

int ranks_per_node(const platforms::Platform& platform, const PlacementOptions& placement) {
  return placement.ranks_per_node > 0 ? placement.ranks_per_node : units_per_node(platform);
}

MeshStop nic_stop(const platforms::KnlMesh& mesh) { return {mesh.columns / 2, 0}; }

std::vector<MeshHop> xy_route(MeshStop from, MeshStop to) {
  std::vector<MeshHop> hops;
  MeshStop at = from;
  while (at.x != to.x) {
    const MeshStop next{at.x + (to.x > at.x ? 1 : -1), at.y};
    hops.push_back({at, next});
    at = next;
  }
  while (at.y != to.y) {
    const MeshStop next{at.x, at.y + (to.y > at.y ? 1 : -1)};
    hops.push_back({at, next});
    at = next;
  }
  return hops;
}

int memory_controller(const platforms::KnlMesh& mesh, MeshStop from, MeshStop to) {
  const bool local = mesh.cluster_mode == platforms::ClusterMode::kSnc4;
  int best = -1;
  int best_distance = 0;
  for (std::size_t i = 0; i < mesh.mcdram_controllers.size(); ++i) {
    const auto& controller = mesh.mcdram_controllers[i];
    if (local && quadrant(mesh, controller) != quadrant(mesh, to)) continue;
    const int distance = std::abs(controller.x - from.x) + std::abs(controller.y - from.y);
    if (best < 0 || distance < best_distance) {
      best = static_cast<int>(i);
      best_distance = distance;
    }
  }
  return best;
}

MeshStop rank_stop(const platforms::Platform& platform, int group, int groups) {
  const auto* mesh = mesh_of(platform);
  DSGD_ENFORCE(mesh != nullptr, "rank_stop needs a KNL mesh");
  const int first = group_cores(platform.nodes.cpu.cores(), groups, group).first;
  return tile_stops(*mesh)[static_cast<std::size_t>(first / mesh->cores_per_tile)];
}

long long rank_capacity(const platforms::Platform& platform, const PlacementOptions& placement) {
  const long long per_node = ranks_per_node(platform, placement);
  return static_cast<long long>(platform.nodes.count) * per_node +
         (placement.master_on_host ? placement.host_ranks : 0);
}

void check_simulatable(const platforms::Platform& platform, int ranks, const PlacementOptions& placement) {
  if (ranks < 1) throw InputError("a simulated world needs at least 1 rank, got " + std::to_string(ranks));
  const int units = units_per_node(platform);
  if (placement.ranks_per_node < 0 || placement.ranks_per_node > units) {
    throw InputError(quoted(platform) + ": " + std::to_string(placement.ranks_per_node) +
                     " ranks per node, but a node has " + std::to_string(units) + " compute units");
  }
  if (placement.ranks_per_node > 1 && mesh_of(platform) == nullptr && platform.nodes.devices_per_node() == 0) {
    throw InputError(quoted(platform) + ": several ranks per node need a KNL mesh or devices in the node");
  }
  if (placement.master_on_host && (placement.host_ranks < 1 || placement.host_ranks > platform.nodes.count)) {
    throw InputError(quoted(platform) + " has " + std::to_string(platform.nodes.count) + " nodes: " +
                     std::to_string(placement.host_ranks) + " ranks on their CPUs (one per node) do not fit");
  }
  if (placement.master_on_host && platform.nodes.devices_per_node() == 0) {
    throw InputError(quoted(platform) + " has no devices: a master on the host needs workers on devices");
  }
  if (ranks > rank_capacity(platform, placement)) {
    throw InputError(quoted(platform) + " holds " + std::to_string(rank_capacity(platform, placement)) + " ranks (" +
                     std::to_string(platform.nodes.count) + " nodes x " +
                     std::to_string(ranks_per_node(platform, placement)) + " per node" +
                     (placement.master_on_host ? " + " + std::to_string(placement.host_ranks) + " on the hosts" : "") +
                     ") but the world has " + std::to_string(ranks));
  }
  const auto& link = platform.network.link;
  if (!(link.bandwidth_Bps > 0)) {
    throw InputError(quoted(platform) + ": link bandwidth_Bps must be > 0, got " + std::to_string(link.bandwidth_Bps));
  }
  if (!(link.latency_s >= 0)) {
    throw InputError(quoted(platform) + ": link latency_s must be >= 0, got " + std::to_string(link.latency_s));
  }
  for (std::size_t i = 0; i < link.segments.size(); ++i) {
    const auto& segment = link.segments[i];
    const std::string which = quoted(platform) + ": link segment " + std::to_string(i);
    if (i == 0 && segment.min_bytes != 0) throw InputError(which + " must start at 0 bytes");
    if (i > 0 && !(segment.min_bytes > link.segments[i - 1].min_bytes)) {
      throw InputError(which + ": min_bytes must ascend strictly");
    }
    if (!(segment.latency_s >= 0)) throw InputError(which + ": latency_s must be >= 0");
    if (!(segment.bandwidth_Bps > 0)) throw InputError(which + ": bandwidth_Bps must be > 0");
  }
  if (!(platform.nodes.cpu.peak_flops > 0)) {
    throw InputError(quoted(platform) + ": cpu peak_flops must be > 0 to simulate compute, got " +
                     std::to_string(platform.nodes.cpu.peak_flops));
  }
  const auto& topology = platform.network.topology;
  if (topology.link_bandwidth_Bps && !(*topology.link_bandwidth_Bps > 0)) {
    throw InputError(quoted(platform) + ": topology link_bandwidth_Bps must be > 0");
  }
  if (topology.link_latency_s && !(*topology.link_latency_s >= 0)) {
    throw InputError(quoted(platform) + ": topology link_latency_s must be >= 0");
  }
  // Platforms built in code skip the loader: the devices' links must still make SimGrid links.
  const int devices = platform.nodes.devices_per_node();
  if (const auto& nvlink = platform.nodes.nvlink) {
    for (const auto& pair : nvlink->pairs) {
      if (pair.a < 0 || pair.b < 0 || pair.a >= devices || pair.b >= devices || pair.a == pair.b || pair.links < 1 ||
          !(pair.bandwidth_Bps > 0) || !(pair.latency_s >= 0)) {
        throw InputError(quoted(platform) + ": NVLink pair " + std::to_string(pair.a) + "-" + std::to_string(pair.b) +
                         " needs two devices of the node, links >= 1, bandwidth_Bps > 0 and latency_s >= 0");
      }
    }
  }
  if (const auto& nvswitch = platform.nodes.nvswitch;
      nvswitch && !(nvswitch->bandwidth_Bps > 0 && nvswitch->latency_s >= 0)) {
    throw InputError(quoted(platform) + ": its NVSwitch needs bandwidth_Bps > 0 and latency_s >= 0");
  }
  if (const auto& nics = platform.nodes.nics; nics && (static_cast<int>(nics->devices.size()) != nics->count ||
                                                       (nics->bandwidth_Bps && !(*nics->bandwidth_Bps > 0)))) {
    throw InputError(quoted(platform) + ": its NICs need one list of devices per NIC and bandwidth_Bps > 0");
  }
  if (const auto* mesh = mesh_of(platform)) {
    if (!mesh->link_bandwidth_Bps || !mesh->hop_latency_s) {
      throw InputError(quoted(platform) + ": its knl_mesh needs link_bandwidth_Bps and hop_latency_s to be simulated");
    }
    if (platform.nodes.memories.empty())
      throw InputError(quoted(platform) + ": a KNL mesh needs a memory to route through");
  }
}

double mesh_memory_Bps(const platforms::Platform& platform) {
  for (const auto& memory : platform.nodes.memories) {
    if (memory.name == "mcdram") return memory.bandwidth_Bps;
  }
  return fastest_memory_Bps(platform);
}

PcieLayout pcie_layout(const platforms::PcieTree& tree) {
  PcieLayout layout;
  layout.elements.emplace_back();  // the root complex
  std::map<std::string, int> switch_index;
  layout.switch_element["host"] = 0;
  for (int d = 0; d < tree.host_devices; ++d) {
    layout.elements.push_back({0, &*tree.host_device_link, "host-dev" + std::to_string(d)});
    layout.device_element.push_back(static_cast<int>(layout.elements.size()) - 1);
  }
  for (const auto& item : tree.switches) {
    const int above = item.parent == "host" ? 0 : switch_index.at(item.parent);
    layout.elements.push_back({above, &item.uplink, item.name + "-up"});
    const int here = static_cast<int>(layout.elements.size()) - 1;
    switch_index[item.name] = here;
    layout.switch_element[item.name] = here;
    for (int d = 0; d < item.devices; ++d) {
      layout.elements.push_back({here, &*item.device_link, item.name + "-dev" + std::to_string(d)});
      layout.device_element.push_back(static_cast<int>(layout.elements.size()) - 1);
    }
  }
  return layout;
}

std::pair<std::vector<int>, std::vector<int>> PcieLayout::route(int a, int b) const {
  const auto chain = [this](int element) {
    std::vector<int> up;
    for (int at = element; at > 0; at = elements[static_cast<std::size_t>(at)].parent) up.push_back(at);
    return up;  // from the element up to (not including) the root
  };
  std::vector<int> up = chain(a);
  std::vector<int> down = chain(b);
  while (!up.empty() && !down.empty() && up.back() == down.back()) {
    up.pop_back();
    down.pop_back();
  }
  std::reverse(down.begin(), down.end());
  return {up, down};
}

namespace {

NodeRoute backwards(const NodeRoute& route) {
  NodeRoute reversed;
  for (auto hop = route.rbegin(); hop != route.rend(); ++hop) reversed.push_back({hop->connection, !hop->forward});
  return reversed;
}

// The devices on the fewest-hop NVLink path from `from` to `to` (both included), breadth first with neighbours in
// ascending order, so ties go to the lowest-numbered devices; empty if none.
std::vector<int> nvlink_path(const std::vector<std::vector<int>>& neighbours, int from, int to) {
  std::vector<int> previous(neighbours.size(), -1);
  previous[static_cast<std::size_t>(from)] = from;
  std::vector<int> frontier = {from};
  for (std::size_t next = 0; next < frontier.size(); ++next) {
    const int at = frontier[next];
    for (const int peer : neighbours[static_cast<std::size_t>(at)]) {
      if (previous[static_cast<std::size_t>(peer)] >= 0) continue;
      previous[static_cast<std::size_t>(peer)] = at;
      frontier.push_back(peer);
    }
  }
  if (previous[static_cast<std::size_t>(to)] < 0) return {};
  std::vector<int> path = {to};
  while (path.back() != from) path.push_back(previous[static_cast<std::size_t>(path.back())]);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

DeviceNodeLayout device_node_layout(const platforms::Platform& platform) {
  const auto& nodes = platform.nodes;
  const int devices = nodes.devices_per_node();
  DSGD_ENFORCE(devices > 0, "device_node_layout needs nodes with devices");
  const int units = devices + 1;  // the CPU last
  DeviceNodeLayout layout;
  layout.between.assign(static_cast<std::size_t>(units), std::vector<NodeRoute>(static_cast<std::size_t>(units)));

  // The PCIe tree: one connection per element below the root complex.
  std::optional<PcieLayout> pcie;
  std::vector<int> connection_of_element;
  std::vector<int> unit_element(static_cast<std::size_t>(units), 0);
  if (const auto* tree = tree_of(platform)) {
    pcie = pcie_layout(*tree);
    connection_of_element.assign(pcie->elements.size(), -1);
    for (std::size_t e = 1; e < pcie->elements.size(); ++e) {
      connection_of_element[e] = static_cast<int>(layout.connections.size());
      layout.connections.push_back({pcie->elements[e].label, pcie->elements[e].link->bandwidth_Bps, 0.0});
    }
    std::copy(pcie->device_element.begin(), pcie->device_element.end(), unit_element.begin());
  }
  const auto pcie_route = [&](int from_element, int to_element) {
    NodeRoute route;
    if (!pcie) return route;
    const auto [up, down] = pcie->route(from_element, to_element);
    for (const int e : up) route.push_back({connection_of_element[static_cast<std::size_t>(e)], true});
    for (const int e : down) route.push_back({connection_of_element[static_cast<std::size_t>(e)], false});
    return route;
  };

  // The devices' own links: one connection per device to an NVSwitch (half the latency each way), or per NVLink
  // pair (forward from its a to its b).
  std::vector<int> switch_port;
  std::map<std::pair<int, int>, NodeHop> pair_hop;  // (from, to) -> hop
  std::vector<std::vector<int>> neighbours(static_cast<std::size_t>(devices));
  if (nodes.nvswitch) {
    for (int d = 0; d < devices; ++d) {
      switch_port.push_back(static_cast<int>(layout.connections.size()));
      layout.connections.push_back(
          {"nvswitch-dev" + std::to_string(d), nodes.nvswitch->bandwidth_Bps, nodes.nvswitch->latency_s / 2});
    }
  } else if (nodes.nvlink) {
    for (const auto& pair : nodes.nvlink->pairs) {
      const int index = static_cast<int>(layout.connections.size());
      layout.connections.push_back({"nvlink-" + std::to_string(pair.a) + "-" + std::to_string(pair.b),
                                    pair.pair_bandwidth_Bps(), pair.latency_s});
      pair_hop[{pair.a, pair.b}] = {index, true};
      pair_hop[{pair.b, pair.a}] = {index, false};
      neighbours[static_cast<std::size_t>(pair.a)].push_back(pair.b);
      neighbours[static_cast<std::size_t>(pair.b)].push_back(pair.a);
    }
    for (auto& list : neighbours) std::sort(list.begin(), list.end());
  }
  const auto device_route = [&](int a, int b) {
    if (nodes.nvswitch) {
      return NodeRoute{{switch_port[static_cast<std::size_t>(a)], true},
                       {switch_port[static_cast<std::size_t>(b)], false}};
    }
    if (nodes.nvlink) {
      if (const auto direct = pair_hop.find({a, b}); direct != pair_hop.end()) return NodeRoute{direct->second};
      if (nodes.nvlink->route_through_devices) {
        const std::vector<int> path = nvlink_path(neighbours, a, b);
        NodeRoute route;
        for (std::size_t i = 1; i < path.size(); ++i) route.push_back(pair_hop.at({path[i - 1], path[i]}));
        if (!route.empty()) return route;
      }
    }
    return pcie_route(unit_element[static_cast<std::size_t>(a)], unit_element[static_cast<std::size_t>(b)]);
  };
  for (int a = 0; a < units; ++a) {
    for (int b = a + 1; b < units; ++b) {
      const bool devices_only = b < devices;
      NodeRoute route = devices_only ? device_route(a, b)
                                     : pcie_route(unit_element[static_cast<std::size_t>(a)],
                                                  unit_element[static_cast<std::size_t>(b)]);
      layout.between[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)] = backwards(route);
      layout.between[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = std::move(route);
    }
  }

  // Each unit's way out: to the point of the PCIe tree its NIC hangs from.
  for (int unit = 0; unit < units; ++unit) {
    const int nic = nodes.nics && unit < devices ? nodes.nics->nic_of_device(unit) : 0;
    int nic_element = 0;
    if (nodes.nics && !nodes.nics->pcie_switches.empty() && pcie) {
      nic_element = pcie->switch_element.at(nodes.nics->pcie_switches[static_cast<std::size_t>(nic)]);
    }
    layout.nic.push_back(nic);
    layout.to_nic.push_back(pcie_route(unit_element[static_cast<std::size_t>(unit)], nic_element));
  }
  return layout;
}

bool simgrid_can_build(const platforms::Platform& platform) {
  // SimGrid 3.32 attaches every inter-group (blue) link to a router of chassis 0, one router per remote group
  // (DragonflyZone.hpp, "LIMITATIONS"); with more groups it indexes past its arrays and crashes at the first message.
  const auto* dragonfly = std::get_if<platforms::DragonflyTopology>(&platform.network.topology.shape);
  return dragonfly == nullptr || dragonfly->groups <= dragonfly->routers_per_chassis;
}

void check_simgrid_can_build(const platforms::Platform& platform) {
  if (simgrid_can_build(platform)) return;
  const auto& dragonfly = std::get<platforms::DragonflyTopology>(platform.network.topology.shape);
  throw InputError(quoted(platform) + ": a dragonfly of " + std::to_string(dragonfly.groups) +
                   " groups needs at least as many routers per chassis (" +
                   std::to_string(dragonfly.routers_per_chassis) +
                   ") for SimGrid 3.32, which wires group g to router g; use the analytic level");
}

std::optional<KernelMachine> kernel_machine(const std::optional<platforms::KernelModel>& model, double peak_flops,
                                            double share, const std::vector<platforms::Memory>& memories) {
  if (!model) return std::nullopt;
  KernelMachine machine;
  machine.peak_flops = peak_flops;
  machine.parallel_units = std::max(1, static_cast<int>(std::lround(model->parallel_units * share)));
  machine.tile_m = model->tile_m;
  machine.tile_n = model->tile_n;
  machine.tiles = model->tiles;
  machine.tile_k_overhead = model->tile_k_overhead;
  machine.kernel_fixed_s = model->fixed_s;
  machine.sync_s_per_unit = model->sync_s_per_unit;
  machine.efficiency = model->efficiency;
  machine.winograd_tiles = model->winograd_3x3_tiles;
  machine.streaming = model->streaming;  // per unit: a share takes fewer units, not slower ones
  machine.gemm_library = model->gemm_library;
  const auto tier = [share](const platforms::Memory& memory, MemoryTier::Scope scope) {
    const double capacity = memory.size_bytes ? *memory.size_bytes : std::numeric_limits<double>::infinity();
    return MemoryTier{memory.name, capacity * share, memory.bandwidth_Bps * share, scope};
  };
  if (model->cache) machine.tiers.push_back(tier(*model->cache, MemoryTier::Scope::kKernel));
  for (const auto& memory : memories) machine.tiers.push_back(tier(memory, MemoryTier::Scope::kIteration));
  return machine;
}

std::vector<RankSite> place_ranks(const platforms::Platform& platform, int ranks, const PlacementOptions& placement) {
  check_simulatable(platform, ranks, placement);
  const auto& cpu = platform.nodes.cpu;
  const int per_node = ranks_per_node(platform, placement);
  std::vector<RankSite> sites;
  sites.reserve(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    const Slot slot = slot_of(platform, rank, placement);
    RankSite site;
    site.node = slot.node;
    site.unit_index = slot.index;
    if (slot.index < 0 || (mesh_of(platform) == nullptr && platform.nodes.devices_per_node() == 0)) {
      site.unit = "cpu";
      site.peak_flops = cpu.peak_flops;
      site.efficiency = cpu.efficiency;
      site.memory_bandwidth_Bps = fastest_memory_Bps(platform);
      site.copy_bandwidth_Bps = site.memory_bandwidth_Bps;
      site.kernels = kernel_machine(cpu.kernels, site.peak_flops, 1, platform.nodes.memories);
      site.profile = cpu.profile;
      site.threads = cpu.cores();
      if (const auto& chip = platform.nodes.shared_chip) {
        site.chip = slot.node / chip->nodes;
        site.chip_cores = chip->cores;
        site.chip_waiting_share = chip->waiting_share;
        // A class measured only with every core busy runs at that rate alone too.
        site.efficiency_alone = cpu.efficiency;
        for (const auto& [kernel_class, fraction] : chip->alone.by_class) {
          site.efficiency_alone.by_class[kernel_class] = fraction;
        }
      }
    } else if (mesh_of(platform) != nullptr) {
      const auto [first, last] = group_cores(cpu.cores(), per_node, slot.index);
      const double share = static_cast<double>(last - first + 1) / cpu.cores();
      site.unit = first == last ? "core " + std::to_string(first)
                                : "cores " + std::to_string(first) + "-" + std::to_string(last);
      site.peak_flops = cpu.peak_flops * share;
      site.efficiency = cpu.efficiency;
      // The cores of a chip share its memory bandwidth.
      site.memory_bandwidth_Bps = fastest_memory_Bps(platform) * share;
      site.copy_bandwidth_Bps = site.memory_bandwidth_Bps;
      site.kernels = kernel_machine(cpu.kernels, site.peak_flops, share, platform.nodes.memories);
      site.profile = cpu.profile;
      site.threads = last - first + 1;
    } else {
      const auto& group = device_group(platform, slot.index);
      site.unit = "device " + std::to_string(slot.index);
      site.peak_flops = group.peak_flops;
      site.efficiency = group.efficiency;
      site.memory_bandwidth_Bps = group.memory.bandwidth_Bps;
      // Batches come from the host over the device's PCIe connection.
      site.copy_bandwidth_Bps = device_link_Bps(platform, slot.index);
      if (!(site.copy_bandwidth_Bps > 0)) site.copy_bandwidth_Bps = fastest_memory_Bps(platform);
      site.kernels = kernel_machine(group.kernels, site.peak_flops, 1, {group.memory});
      site.profile = group.profile;
    }
    site.datagram_Bps = cpu.datagram_Bps;  // the host's cores handle datagrams, a device's rank's too
    sites.push_back(std::move(site));
  }
  std::map<int, int> ranks_on_chip;
  for (const auto& site : sites) {
    if (site.chip >= 0) ++ranks_on_chip[site.chip];
  }
  for (auto& site : sites) {
    if (site.chip >= 0) site.chip_ranks = ranks_on_chip[site.chip];
  }
  return sites;
}

namespace {

// One node as built: what the network above connects to, and the host of each of its units.
struct BuiltNode {
  NetPoint* netpoint = nullptr;
  NetPoint* gateway = nullptr;    // null when the node is a plain host
  std::vector<s4u::Host*> units;  // by unit index; the CPU of a node with devices last
};

class Builder {
 public:
  Builder(const platforms::Platform& platform, int ranks, const PlacementOptions& placement)
      : platform_(platform), placement_(placement), per_node_(ranks_per_node(platform, placement)) {
    const Slot last = slot_of(platform, ranks - 1, placement);
    // Ranks on the hosts (a sharded server's) occupy nodes 0..host_ranks-1 even where fewer nodes hold workers.
    occupied_nodes_ = std::max(last.node + 1, placement.master_on_host ? std::min(placement.host_ranks, ranks) : 0);
    if (mesh_of(platform) == nullptr && platform.nodes.devices_per_node() > 0) layout_ = device_node_layout(platform);
  }

  int occupied_nodes() const { return occupied_nodes_; }

  // Node `node` inside `parent`. With `own_link`, traffic leaving the node crosses the node's link (alpha/2, the
  // node link's bandwidth) inside it, so the node is always a zone; without, a node with no intra-node topology is
  // a plain host and its parent provides the link.
  BuiltNode build_node(s4u::NetZone* parent, int node, bool own_link) {
    const std::string name = "node-" + std::to_string(node);
    if (const auto* mesh = mesh_of(platform_)) return build_mesh(parent, name, *mesh, own_link);
    if (layout_) return build_devices(parent, name, own_link);
    BuiltNode built;
    if (!own_link) {
      auto* host = parent->create_host(name, platform_.nodes.cpu.peak_flops);
      built.netpoint = host->get_netpoint();
      built.units.push_back(host);
      return built;
    }
    auto* zone = s4u::create_full_zone(name);
    zone->set_parent(parent);
    built.netpoint = zone->get_netpoint();
    built.gateway = zone->create_router(name + "-nic");
    built.units.push_back(zone->create_host(name + "-cpu", platform_.nodes.cpu.peak_flops));
    zone->add_route(built.units[0]->get_netpoint(), built.gateway, nullptr, nullptr, uplink(zone, name, true), true);
    zone->seal();
    return built;
  }

  s4u::Host* host_of_rank(const std::vector<BuiltNode>& nodes, int rank) const {
    const Slot slot = slot_of(platform_, rank, placement_);
    const BuiltNode& node = nodes[static_cast<std::size_t>(slot.node)];
    if (slot.index < 0) return node.units.back();  // the CPU
    return node.units[static_cast<std::size_t>(slot.index)];
  }

 private:
  BuiltNode build_mesh(s4u::NetZone* parent, const std::string& name, const platforms::KnlMesh& mesh, bool own_link) {
    auto* zone = s4u::create_full_zone(name);
    zone->set_parent(parent);
    // Split-duplex links between adjacent stops, keyed by the stop with the smaller coordinates.
    std::map<std::tuple<int, int, int>, s4u::Link*> links;  // (x, y, 0 = east / 1 = south)
    const auto link_between = [&](const MeshHop& hop) {
      const platforms::MeshStop low{std::min(hop.from.x, hop.to.x), std::min(hop.from.y, hop.to.y)};
      const int direction = hop.from.x != hop.to.x ? 0 : 1;
      const auto key = std::make_tuple(low.x, low.y, direction);
      auto found = links.find(key);
      if (found == links.end()) {
        auto* link = zone->create_split_duplex_link(name + "-mesh-" + std::to_string(low.x) + "." +
                                                        std::to_string(low.y) + (direction == 0 ? "e" : "s"),
                                                    *mesh.link_bandwidth_Bps)
                         ->set_latency(*mesh.hop_latency_s)
                         ->seal();
        found = links.emplace(key, link).first;
      }
      const bool forward = hop.to.x > hop.from.x || hop.to.y > hop.from.y;
      return s4u::LinkInRoute(found->second,
                              forward ? s4u::LinkInRoute::Direction::UP : s4u::LinkInRoute::Direction::DOWN);
    };
    const auto path = [&](platforms::MeshStop from, platforms::MeshStop to, std::vector<s4u::LinkInRoute>& out) {
      for (const auto& hop : xy_route(from, to)) out.push_back(link_between(hop));
    };
    // The memory the ranks work in, spread over its controllers.
    const double memory_Bps = mesh_memory_Bps(platform_);
    std::vector<s4u::Link*> controllers;
    for (std::size_t i = 0; i < mesh.mcdram_controllers.size(); ++i) {
      controllers.push_back(zone->create_link(name + "-edc-" + std::to_string(i),
                                              memory_Bps / static_cast<double>(mesh.mcdram_controllers.size()))
                                ->set_sharing_policy(s4u::Link::SharingPolicy::SHARED)
                                ->seal());
    }

    BuiltNode built;
    built.netpoint = zone->get_netpoint();
    auto* gateway = zone->create_router(name + "-nic");
    built.gateway = gateway;
    const auto node_link = uplink(zone, name, own_link);
    const int cores = platform_.nodes.cpu.cores();
    std::vector<platforms::MeshStop> stops;
    for (int group = 0; group < per_node_; ++group) {
      const auto [first, last] = group_cores(cores, per_node_, group);
      const double share = static_cast<double>(last - first + 1) / cores;
      built.units.push_back(
          zone->create_host(name + "-g" + std::to_string(group), platform_.nodes.cpu.peak_flops * share));
      stops.push_back(rank_stop(platform_, group, per_node_));
    }
    for (std::size_t a = 0; a < built.units.size(); ++a) {
      for (std::size_t b = 0; b < built.units.size(); ++b) {
        if (a == b) continue;
        std::vector<s4u::LinkInRoute> route;
        const int controller = memory_controller(mesh, stops[a], stops[b]);
        const platforms::MeshStop via = mesh.mcdram_controllers[static_cast<std::size_t>(controller)];
        path(stops[a], via, route);
        route.emplace_back(controllers[static_cast<std::size_t>(controller)]);
        path(via, stops[b], route);
        zone->add_route(built.units[a]->get_netpoint(), built.units[b]->get_netpoint(), nullptr, nullptr, route,
                        /*symmetrical=*/false);
      }
      std::vector<s4u::LinkInRoute> out;
      path(stops[a], nic_stop(mesh), out);
      for (const auto& link : node_link) out.push_back(link);
      if (out.empty()) out.emplace_back(link_between({nic_stop(mesh), {nic_stop(mesh).x, nic_stop(mesh).y + 1}}));
      zone->add_route(built.units[a]->get_netpoint(), gateway, nullptr, nullptr, out, /*symmetrical=*/true);
    }
    zone->seal();
    return built;
  }

  // A node with devices, wired as device_node_layout() says. Its NICs' links are inside it with own_link, and
  // always when it has several NICs (the network above then adds no link of its own).
  BuiltNode build_devices(s4u::NetZone* parent, const std::string& name, bool own_link) {
    auto* zone = s4u::create_full_zone(name);
    zone->set_parent(parent);
    BuiltNode built;
    built.netpoint = zone->get_netpoint();
    built.gateway = zone->create_router(name + "-nic");
    const DeviceNodeLayout& layout = *layout_;
    std::vector<s4u::Link*> connections;
    for (const auto& connection : layout.connections) {
      connections.push_back(zone->create_split_duplex_link(name + "-" + connection.label, connection.bandwidth_Bps)
                                ->set_latency(connection.latency_s)
                                ->seal());
    }
    const auto links_of = [&](const NodeRoute& route) {
      std::vector<s4u::LinkInRoute> links;
      for (const auto& hop : route) {
        links.emplace_back(connections[static_cast<std::size_t>(hop.connection)],
                           hop.forward ? s4u::LinkInRoute::Direction::UP : s4u::LinkInRoute::Direction::DOWN);
      }
      return links;
    };
    int device = 0;
    for (const auto& group : platform_.nodes.devices) {
      for (int d = 0; d < group.count; ++d, ++device) {
        built.units.push_back(zone->create_host(name + "-dev" + std::to_string(device), group.peak_flops));
      }
    }
    built.units.push_back(zone->create_host(name + "-cpu", platform_.nodes.cpu.peak_flops));
    // The root complex joins the CPU, the NICs and the top of the tree; crossing it is free, so a route holds it only
    // where it has no other link (SimGrid wants one). Anywhere else it would bound no flow yet tie every flow
    // through the node into one set of constraints, which SimGrid's max-min solver walks whole at each event: the
    // sharded PS at 512 GPUs took twice the wall time (docs/simulation.md "Profiles").
    auto* root = zone->create_link(name + "-root", 1e15)->set_sharing_policy(s4u::Link::SharingPolicy::FATPIPE)->seal();
    std::vector<std::vector<s4u::LinkInRoute>> nic_links;  // per NIC: the route's end through it
    if (platform_.nodes.nics) {
      const auto& nics = *platform_.nodes.nics;
      const auto& link = platform_.network.link;
      for (int nic = 0; nic < nics.count; ++nic) {
        auto* own = zone->create_split_duplex_link(name + "-nic" + std::to_string(nic) + "-link",
                                                   nics.bandwidth_Bps.value_or(link.bandwidth_Bps))
                        ->set_latency(link.latency_s / 2)
                        ->seal();
        nic_links.push_back({{own, s4u::LinkInRoute::Direction::UP}});
      }
    } else {
      nic_links.push_back(uplink(zone, name, own_link));
    }
    for (std::size_t a = 0; a < built.units.size(); ++a) {
      for (std::size_t b = a + 1; b < built.units.size(); ++b) {
        auto links = links_of(layout.between[a][b]);
        if (links.empty()) links.emplace_back(root);
        zone->add_route(built.units[a]->get_netpoint(), built.units[b]->get_netpoint(), nullptr, nullptr, links, true);
      }
      auto links = links_of(layout.to_nic[a]);
      for (const auto& link : nic_links[static_cast<std::size_t>(layout.nic[a])]) links.push_back(link);
      if (links.empty()) links.emplace_back(root);
      zone->add_route(built.units[a]->get_netpoint(), built.gateway, nullptr, nullptr, links, true);
    }
    zone->seal();
    return built;
  }

  // The node's link to the network, as the route from inside the node to its gateway ends; none unless own_link.
  std::vector<s4u::LinkInRoute> uplink(s4u::NetZone* zone, const std::string& name, bool own_link) const {
    if (!own_link) return {};
    const auto& link = platform_.network.link;
    auto* own =
        zone->create_split_duplex_link(name + "-link", link.bandwidth_Bps)->set_latency(link.latency_s / 2)->seal();
    return {{own, s4u::LinkInRoute::Direction::UP}};
  }

  const platforms::Platform& platform_;
  PlacementOptions placement_;
  int per_node_;
  int occupied_nodes_ = 0;
  std::optional<DeviceNodeLayout> layout_;  // of a node with devices
};

}  // namespace

std::vector<s4u::Host*> build_platform(const platforms::Platform& platform, int ranks,
                                       const PlacementOptions& placement) {
  check_simulatable(platform, ranks, placement);
  check_simgrid_can_build(platform);
  const auto& link = platform.network.link;
  const auto& topology = platform.network.topology;
  const std::string zone_name = platform.name.empty() ? "dsgd" : platform.name;
  Builder builder(platform, ranks, placement);
  std::vector<BuiltNode> nodes;
  nodes.reserve(static_cast<std::size_t>(builder.occupied_nodes()));

  if (topology.kind() == platforms::TopologyKind::kStar) {
    auto* zone = s4u::create_star_zone(zone_name);
    // A backbone, when the platform names one, is shared by every message (SimGrid's cluster backbone).
    s4u::Link* backbone = nullptr;
    if (topology.link_bandwidth_Bps || topology.link_latency_s) {
      backbone = zone->create_link("backbone", topology.link_bandwidth_Bps.value_or(link.bandwidth_Bps))
                     ->set_latency(topology.link_latency_s.value_or(0.0))
                     ->set_sharing_policy(s4u::Link::SharingPolicy::SHARED)
                     ->seal();
    }
    // Nodes with several NICs hold their NICs' links; the star then joins them through a free link.
    s4u::Link* free = nullptr;
    if (platform.nodes.nics) {
      free = zone->create_link("nics", 1e15)->set_sharing_policy(s4u::Link::SharingPolicy::FATPIPE)->seal();
    }
    // A star is symmetric: nodes beyond the occupied ones would carry no traffic and are not built.
    for (int node = 0; node < builder.occupied_nodes(); ++node) {
      BuiltNode built = builder.build_node(zone, node, /*own_link=*/false);
      // Half of alpha on each end: a message crosses the sender's link up and the receiver's link down.
      const auto own_way = [&]() -> std::pair<s4u::LinkInRoute, s4u::LinkInRoute> {
        if (free != nullptr) return {s4u::LinkInRoute(free), s4u::LinkInRoute(free)};
        auto* own = zone->create_split_duplex_link("link-" + std::to_string(node), link.bandwidth_Bps)
                        ->set_latency(link.latency_s / 2)
                        ->seal();
        return {{own, s4u::LinkInRoute::Direction::UP}, {own, s4u::LinkInRoute::Direction::DOWN}};
      };
      const auto [up, down] = own_way();
      if (backbone == nullptr) {
        zone->add_route(built.netpoint, nullptr, built.gateway, nullptr, {up}, /*symmetrical=*/true);
      } else {
        // Up to the centre through the backbone, down without it, so a message crosses the backbone once.
        zone->add_route(built.netpoint, nullptr, built.gateway, nullptr, {up, s4u::LinkInRoute(backbone)},
                        /*symmetrical=*/false);
        zone->add_route(nullptr, built.netpoint, nullptr, built.gateway, {down}, /*symmetrical=*/false);
      }
      nodes.push_back(std::move(built));
    }
    zone->seal();
  } else {
    // Without its own bandwidth the fabric is not a bottleneck (docs/platform-schema.md "topology"): each of its links
    // carries what every node could inject at once. At the node link's bandwidth, exchanges of several nodes through
    // one uplink queued there.
    const auto& nics = platform.nodes.nics;
    const double node_injection_Bps =
        nics ? nics->count * nics->bandwidth_Bps.value_or(link.bandwidth_Bps) : link.bandwidth_Bps;
    const double fabric_Bps =
        topology.link_bandwidth_Bps.value_or(node_injection_Bps * std::max(1, builder.occupied_nodes()));
    const double fabric_s = topology.link_latency_s.value_or(0.0);
    nodes.resize(static_cast<std::size_t>(builder.occupied_nodes()));
    const auto netpoint = [&](s4u::NetZone* zone, const std::vector<unsigned long>&,
                              unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
      const auto node = static_cast<int>(id);
      if (node >= builder.occupied_nodes()) {
        auto* idle = zone->create_host("idle-" + std::to_string(id), platform.nodes.cpu.peak_flops);
        return {idle->get_netpoint(), nullptr};
      }
      BuiltNode& built = nodes[static_cast<std::size_t>(node)];
      built = builder.build_node(zone, node, /*own_link=*/true);
      return {built.netpoint, built.gateway};
    };
    const s4u::ClusterCallbacks callbacks(netpoint);
    // Full duplex, as the fabrics described are: a node's sends and receives do not share one bandwidth.
    const auto duplex = s4u::Link::SharingPolicy::SPLITDUPLEX;
    if (const auto* tree = std::get_if<platforms::FatTreeTopology>(&topology.shape)) {
      const auto to_unsigned = [](const std::vector<int>& values) {
        return std::vector<unsigned int>(values.begin(), values.end());
      };
      s4u::create_fatTree_zone(zone_name, nullptr,
                               {static_cast<unsigned int>(tree->down.size()), to_unsigned(tree->down),
                                to_unsigned(tree->up), to_unsigned(tree->link_counts)},
                               callbacks, fabric_Bps, fabric_s, duplex)
          ->seal();
    } else if (const auto* torus = std::get_if<platforms::TorusTopology>(&topology.shape)) {
      s4u::create_torus_zone(zone_name, nullptr,
                             std::vector<unsigned long>(torus->dimensions.begin(), torus->dimensions.end()), callbacks,
                             fabric_Bps, fabric_s, duplex)
          ->seal();
    } else {
      const auto& fly = std::get<platforms::DragonflyTopology>(topology.shape);
      // Only the groups (and, within one group, the chassis) that hold ranks.
      const int per_chassis = fly.routers_per_chassis * fly.nodes_per_router;
      const int per_group = fly.chassis_per_group * per_chassis;
      const int groups = (builder.occupied_nodes() + per_group - 1) / per_group;
      const int chassis =
          groups > 1 ? fly.chassis_per_group : (builder.occupied_nodes() + per_chassis - 1) / per_chassis;
      const auto u = [](int value) { return static_cast<unsigned int>(value); };
      s4u::create_dragonfly_zone(zone_name, nullptr,
                                 {{u(groups), u(fly.group_links)},
                                  {u(chassis), u(fly.chassis_links)},
                                  {u(fly.routers_per_chassis), u(fly.router_links)},
                                  u(fly.nodes_per_router)},
                                 callbacks, fabric_Bps, fabric_s, duplex)
          ->seal();
    }
  }

  std::vector<s4u::Host*> hosts;
  hosts.reserve(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) hosts.push_back(builder.host_of_rank(nodes, rank));
  return hosts;
}

void install_segment_factors(const platforms::Platform& platform, const SharesCores& shares_cores) {
  namespace s4u = ::simgrid::s4u;
  const auto& chip = platform.nodes.shared_chip;
  const std::optional<platforms::Link> loaded = chip && shares_cores ? chip->loaded_link : std::nullopt;
  if (platform.network.link.segments.empty() && !loaded) return;
  const auto& topology = platform.network.topology;
  const double base_latency_s = platform.network.link.latency_s;  // what build_platform put on the route: two halves
  const std::optional<double> backbone_bandwidth = topology.link_bandwidth_Bps;
  auto* model = s4u::Engine::get_instance()->get_netzone_root()->get_network_model();
  // The link a message starting now between `src` and `dst` costs: SimGrid asks both factors as it starts one.
  const auto link_of = [link = platform.network.link, loaded, shares_cores](
                           const s4u::Host* src, const s4u::Host* dst) -> const platforms::Link& {
    return loaded && shares_cores(src, dst) ? *loaded : link;
  };

  // A message between two units of one node (a zone of its own below the root) crosses no node link.
  const auto* root = s4u::Engine::get_instance()->get_netzone_root();
  const auto inside_one_node = [root](const s4u::Host* src, const s4u::Host* dst) {
    return src == dst || (src->get_englobing_zone() == dst->get_englobing_zone() && src->get_englobing_zone() != root);
  };
  // Route latency = the node links' base latency + the backbone's, if any: swap the base for the segment's.
  model->set_lat_factor_cb([link_of, base_latency_s, inside_one_node](
                               double size, const s4u::Host* src, const s4u::Host* dst,
                               const std::vector<s4u::Link*>& links, const std::unordered_set<s4u::NetZone*>&) {
    if (inside_one_node(src, dst)) return 1.0;  // loopback or inside a node: not the node link
    double route_s = 0;
    for (const auto* hop : links) route_s += hop->get_latency();
    if (!(route_s > 0)) return 1.0;
    return (route_s - base_latency_s + link_of(src, dst).latency_s_for(size)) / route_s;
  });
  // The flow runs at its bottleneck's bandwidth times this factor: make that the segment's bandwidth, still
  // capped by a backbone the topology names.
  model->set_bw_factor_cb([link_of, backbone_bandwidth, inside_one_node](
                              double size, const s4u::Host* src, const s4u::Host* dst,
                              const std::vector<s4u::Link*>& links, const std::unordered_set<s4u::NetZone*>&) {
    if (inside_one_node(src, dst) || links.empty()) return 1.0;
    double bottleneck = links.front()->get_bandwidth();  // B/s, as every bandwidth here
    for (const auto* hop : links) bottleneck = std::min(bottleneck, hop->get_bandwidth());
    double wanted = link_of(src, dst).bandwidth_Bps_for(size);
    if (backbone_bandwidth) wanted = std::min(wanted, *backbone_bandwidth);
    return wanted / bottleneck;
  });
}

platforms::Platform flat_platform(int nodes, double latency_s, double bandwidth_Bps, double flops) {
  if (nodes < 1) throw InputError("flat_platform: nodes must be >= 1, got " + std::to_string(nodes));
  if (!(latency_s >= 0)) throw InputError("flat_platform: latency_s must be >= 0, got " + std::to_string(latency_s));
  if (!(bandwidth_Bps > 0)) {
    throw InputError("flat_platform: bandwidth_Bps must be > 0, got " + std::to_string(bandwidth_Bps));
  }
  if (!(flops > 0)) throw InputError("flat_platform: flops must be > 0, got " + std::to_string(flops));

  const std::string source = "flat_platform() argument";
  platforms::Platform platform;
  platform.name = "flat-" + std::to_string(nodes);
  platform.description = "flat alpha-beta star of " + std::to_string(nodes) + " nodes (tests, calibration)";
  platform.nodes.count = nodes;
  platform.nodes.cpu.model = "abstract";
  platform.nodes.cpu.cores_per_socket = 1;
  platform.nodes.cpu.peak_flops = flops;
  platform.nodes.cpu.sources["peak_flops"] = source;
  platform.nodes.sources["count"] = source;
  platform.network.link.name = "flat";
  platform.network.link.description = "alpha-beta link";
  platform.network.link.latency_s = latency_s;
  platform.network.link.bandwidth_Bps = bandwidth_Bps;
  platform.network.link.sources["latency_s"] = source;
  platform.network.link.sources["bandwidth_Bps"] = source;
  platform.network.topology.shape = platforms::StarTopology{};
  platform.noise.distribution = platforms::NoiseDistribution::kNone;
  return platform;
}

}  // namespace dsgd::simulate
