#pragma once
// The route between two ranks as simulate/simgrid/platform_builder.hpp builds it in SimGrid, priced in closed
// form for the analytic fidelity level (docs/design.md "Fidelity levels"): the sum of the route's latencies and
// its narrowest bandwidth, with no contention -- every message has its route to itself. No SimGrid engine.
//
// Pieces, each mirroring the builder:
//  * inside a KNL node: sender's stop -> MCDRAM controller -> receiver's stop (XY hops of the mesh's link
//    bandwidth and hop latency, the controller a link of MCDRAM bandwidth / controllers);
//  * inside a node with devices: the routes of device_node_layout() -- PCIe up to the lowest common switch and
//    down (each connection its bandwidth, no latency), NVLink pairs and NVSwitch ports with their latencies;
//  * leaving a node: to the NIC (the NIC's stop, or where the unit's NIC hangs in the PCIe tree), then the node's
//    link (alpha / 2, its bandwidth or the NIC's; a piecewise link's segment for the message's size, as
//    install_segment_factors makes SimGrid do);
//  * between nodes: a star's backbone, if any; a fat tree's links up to the lowest common level and down; a
//    torus's shortest hops per dimension; a dragonfly's minimal route as SimGrid 3.32 routes it (node link to the
//    router, green to the router of the right blade, black to the right chassis, blue to the other group). The
//    fabric's links all have the topology's link bandwidth and latency (several parallel links only add
//    bandwidth, which never lowers the bottleneck).
// tests/simulate/analytic/route_model_test.cpp holds these against SimGrid's message-level times.

#include <optional>
#include <vector>

#include "platforms/platform.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// A route's cost, apart from the node links it crosses (priced per message size: their segments).
struct RouteCost {
  double latency_s = 0;
  double bandwidth_Bps = 0;  // bottleneck of the links other than the node links; 0: none (infinite)
  int node_links = 0;        // 0 inside a node, 2 between nodes (each a half of the link's alpha)
};

class RouteModel {
 public:
  // Places `ranks` ranks as the SimGrid executor would (throws what check_simulatable and place_ranks throw). Only
  // the first node's ranks are placed in full (with a master on the host, the hosts' ranks too; on a shared chip,
  // the first chip's): a rank on another node sits on the same unit as one of them, and a RankSite each would cost
  // gigabytes at ten million ranks. A rank's node and unit come from the placement's arithmetic.
  RouteModel(const platforms::Platform& platform, int ranks, const PlacementOptions& placement);

  int ranks() const { return ranks_; }
  int nodes() const { return nodes_; }  // that the ranks occupy
  int node_of(int rank) const { return slot(rank).node; }
  // The ranks placed in full, in rank order from rank 0.
  const std::vector<RankSite>& placed_sites() const { return sites_; }
  // The site of a placed rank on the same unit as `rank` (its unit index, peak, efficiencies); its `node` is that
  // placed rank's, not necessarily `rank`'s (node_of).
  const RankSite& unit_site(int rank) const;
  RouteCost route(int from, int to) const;
  // Seconds for a message of `bytes` from rank `from` to rank `to`; 0 to itself.
  double message_s(int from, int to, double bytes) const;
  // The latency and bottleneck bandwidth (infinite: no link) of such a message: message_s = latency + bytes / it.
  struct Price {
    double latency_s = 0;
    double bandwidth_Bps = 0;
  };
  Price price(int from, int to, double bytes) const;

 private:
  struct Slot {
    int node = 0;
    int unit = 0;  // unit index on the node; -1 for the CPU of a master on the host
  };
  Slot slot(int rank) const;
  RouteCost fabric(int from_node, int to_node) const;

  const platforms::Platform& platform_;
  int ranks_ = 0;
  int per_node_ = 1;    // ranks_per_node()
  int host_ranks_ = 0;  // ranks on the hosts' CPUs, before the workers (PlacementOptions::master_on_host)
  int nodes_ = 0;
  std::vector<RankSite> sites_;                  // the ranks placed in full
  std::vector<RouteCost> to_nic_;                // per unit index (the CPU last): from the unit to the NIC
  std::vector<std::vector<RouteCost>> between_;  // per pair of unit indices of one node
  std::optional<double> nic_Bps_;                // platforms::Nics::bandwidth_Bps, where the NICs have their own
};

}  // namespace dsgd::simulate
