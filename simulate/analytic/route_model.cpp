#include "simulate/analytic/route_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace dsgd::simulate {

namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();

// The bottleneck of two bandwidths where 0 stands for "no link".
double narrower(double a, double b) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return std::min(a, b);
}

// Appends `hops` links of one latency and bandwidth.
void add_links(RouteCost& cost, int hops, double latency_s, double bandwidth_Bps) {
  if (hops <= 0) return;
  cost.latency_s += hops * latency_s;
  cost.bandwidth_Bps = narrower(cost.bandwidth_Bps, bandwidth_Bps);
}

void add_route(RouteCost& cost, const RouteCost& more) {
  cost.latency_s += more.latency_s;
  cost.bandwidth_Bps = narrower(cost.bandwidth_Bps, more.bandwidth_Bps);
  cost.node_links += more.node_links;
}

int manhattan(platforms::MeshStop a, platforms::MeshStop b) { return std::abs(a.x - b.x) + std::abs(a.y - b.y); }

// Router-to-router links of SimGrid 3.32's minimal dragonfly route between two nodes (node links excluded).
int dragonfly_router_hops(const platforms::DragonflyTopology& fly, int from, int to) {
  struct Router {
    int group = 0;
    int chassis = 0;
    int blade = 0;
  };
  const auto router_of = [&fly](int node) {
    const int per_chassis = fly.routers_per_chassis * fly.nodes_per_router;
    const int per_group = fly.chassis_per_group * per_chassis;
    return Router{node / per_group, node % per_group / per_chassis, node % per_chassis / fly.nodes_per_router};
  };
  const Router target = router_of(to);
  Router at = router_of(from);
  int hops = 0;
  if (at.group != target.group) {
    // To the router of this group whose blue link leads to the target group: blade = target group, chassis 0.
    if (at.blade != target.group) ++hops;
    if (at.chassis != 0) ++hops;
    ++hops;  // blue: arrives at chassis 0, blade = the source group, of the target group
    at = {target.group, 0, router_of(from).group};
  }
  if (at.blade != target.blade) ++hops;      // green, within the chassis
  if (at.chassis != target.chassis) ++hops;  // black, between chassis
  return hops;
}

// Links of a fat tree between two leaves: up to the lowest level where they share a switch, and down.
int fat_tree_hops(const platforms::FatTreeTopology& tree, int from, int to) {
  long long below = 1;
  for (std::size_t level = 0; level < tree.down.size(); ++level) {
    below *= tree.down[level];
    if (from / below == to / below) return 2 * static_cast<int>(level + 1);
  }
  return 2 * static_cast<int>(tree.down.size());
}

// Links of a torus between two positions: the shorter way round in each dimension.
int torus_hops(const platforms::TorusTopology& torus, int from, int to) {
  int hops = 0;
  for (const int size : torus.dimensions) {
    const int distance = std::abs(from % size - to % size);
    hops += std::min(distance, size - distance);
    from /= size;
    to /= size;
  }
  return hops;
}

}  // namespace

RouteModel::RouteModel(const platforms::Platform& platform, int ranks, const PlacementOptions& placement)
    : platform_(platform),
      ranks_(ranks),
      per_node_(ranks_per_node(platform, placement)),
      host_ranks_(placement.master_on_host ? placement.host_ranks : 0) {
  check_simulatable(platform, ranks, placement);
  // place_ranks' arithmetic (simulate/simgrid/platform_builder.cpp slot_of): the hosts' ranks on nodes 0.., then
  // per_node_ workers per node. A shared chip's ranks count each other (RankSite::chip_ranks): place its first chip.
  const int chip_nodes = platform.nodes.shared_chip ? std::max(1, platform.nodes.shared_chip->nodes) : 1;
  const long long placed = std::min<long long>(ranks, host_ranks_ + static_cast<long long>(per_node_) * chip_nodes);
  sites_ = place_ranks(platform, static_cast<int>(placed), placement);
  nodes_ = std::max(node_of(ranks - 1) + 1, std::min(host_ranks_, ranks));
  const bool star = std::holds_alternative<platforms::StarTopology>(platform.network.topology.shape);
  if (const auto* mesh = std::get_if<platforms::KnlMesh>(&platform.nodes.intra_node)) {
    const int groups = ranks_per_node(platform, placement);
    std::vector<platforms::MeshStop> stops;
    for (int group = 0; group < groups; ++group) stops.push_back(rank_stop(platform, group, groups));
    const double hop_s = *mesh->hop_latency_s;
    const double link_Bps = *mesh->link_bandwidth_Bps;
    const double controller_Bps = mesh_memory_Bps(platform) / static_cast<double>(mesh->mcdram_controllers.size());
    between_.assign(stops.size(), std::vector<RouteCost>(stops.size()));
    for (std::size_t a = 0; a < stops.size(); ++a) {
      for (std::size_t b = 0; b < stops.size(); ++b) {
        if (a == b) continue;
        const int controller = memory_controller(*mesh, stops[a], stops[b]);
        const platforms::MeshStop via = mesh->mcdram_controllers[static_cast<std::size_t>(controller)];
        RouteCost& cost = between_[a][b];
        add_links(cost, manhattan(stops[a], via) + manhattan(via, stops[b]), hop_s, link_Bps);
        cost.bandwidth_Bps = narrower(cost.bandwidth_Bps, controller_Bps);
      }
      RouteCost out;
      // A star's node link sits outside the node: the builder gives a rank on the NIC's own stop one mesh hop so
      // that its route to the gateway is not empty.
      add_links(out, std::max(manhattan(stops[a], nic_stop(*mesh)), star ? 1 : 0), hop_s, link_Bps);
      to_nic_.push_back(out);
    }
  } else if (platform.nodes.devices_per_node() > 0) {
    // The connections the builder wires: PCIe tree, NVLinks or NVSwitch; then the unit's NIC.
    const DeviceNodeLayout layout = device_node_layout(platform);
    const auto cost_of = [&layout](const NodeRoute& route) {
      RouteCost cost;
      for (const auto& hop : route) {
        const auto& connection = layout.connections[static_cast<std::size_t>(hop.connection)];
        add_links(cost, 1, connection.latency_s, connection.bandwidth_Bps);
      }
      return cost;
    };
    const std::size_t units = layout.between.size();
    between_.assign(units, std::vector<RouteCost>(units));
    for (std::size_t a = 0; a < units; ++a) {
      for (std::size_t b = 0; b < units; ++b) {
        if (a != b) between_[a][b] = cost_of(layout.between[a][b]);
      }
      to_nic_.push_back(cost_of(layout.to_nic[a]));
    }
    if (platform.nodes.nics) nic_Bps_ = platform.nodes.nics->bandwidth_Bps;
  } else {
    to_nic_.emplace_back();
  }
}

RouteCost RouteModel::fabric(int from_node, int to_node) const {
  const auto& topology = platform_.network.topology;
  RouteCost cost;
  if (std::holds_alternative<platforms::StarTopology>(topology.shape)) {
    if (topology.link_bandwidth_Bps || topology.link_latency_s) {
      add_links(cost, 1, topology.link_latency_s.value_or(0.0),
                topology.link_bandwidth_Bps.value_or(platform_.network.link.bandwidth_Bps));
    }
    return cost;
  }
  int hops = 0;
  if (const auto* tree = std::get_if<platforms::FatTreeTopology>(&topology.shape)) {
    hops = fat_tree_hops(*tree, from_node, to_node);
  } else if (const auto* torus = std::get_if<platforms::TorusTopology>(&topology.shape)) {
    hops = torus_hops(*torus, from_node, to_node);
  } else {
    // The node-to-router links of SimGrid's cluster zone, then the routers' links.
    hops = 2 + dragonfly_router_hops(std::get<platforms::DragonflyTopology>(topology.shape), from_node, to_node);
  }
  add_links(cost, hops, topology.link_latency_s.value_or(0.0),
            topology.link_bandwidth_Bps.value_or(platform_.network.link.bandwidth_Bps));
  return cost;
}

RouteModel::Slot RouteModel::slot(int rank) const {
  if (rank < host_ranks_) return {rank, -1};
  const int worker = rank - host_ranks_;
  return {worker / per_node_, worker % per_node_};
}

const RankSite& RouteModel::unit_site(int rank) const {
  DSGD_ENFORCE(rank >= 0 && rank < ranks_,
               "unit_site of rank " + std::to_string(rank) + " of " + std::to_string(ranks_));
  if (static_cast<std::size_t>(rank) < sites_.size()) return sites_[static_cast<std::size_t>(rank)];
  return sites_[static_cast<std::size_t>(host_ranks_ + slot(rank).unit)];
}

RouteCost RouteModel::route(int from, int to) const {
  const Slot a = slot(from);
  const Slot b = slot(to);
  const auto unit = [this](const Slot& site) {
    return static_cast<std::size_t>(site.unit < 0 ? static_cast<int>(to_nic_.size()) - 1 : site.unit);
  };
  if (from == to) return {};
  if (a.node == b.node) return between_[unit(a)][unit(b)];
  RouteCost cost = to_nic_[unit(a)];
  cost.node_links = 2;
  add_route(cost, fabric(a.node, b.node));
  add_route(cost, to_nic_[unit(b)]);
  return cost;
}

RouteModel::Price RouteModel::price(int from, int to, double bytes) const {
  const RouteCost cost = route(from, to);
  const auto& link = platform_.network.link;
  Price price{cost.latency_s, cost.bandwidth_Bps > 0 ? cost.bandwidth_Bps : kInfinite};
  if (cost.node_links > 0) {
    price.latency_s += link.latency_s_for(bytes);
    // A NIC of its own bandwidth replaces the link's (the loader allows it only on a link without segments).
    price.bandwidth_Bps = std::min(price.bandwidth_Bps, nic_Bps_.value_or(link.bandwidth_Bps_for(bytes)));
  }
  return price;
}

double RouteModel::message_s(int from, int to, double bytes) const {
  if (from == to) return 0;
  const Price route = price(from, to, bytes);
  return route.latency_s + bytes / route.bandwidth_Bps;
}

}  // namespace dsgd::simulate
