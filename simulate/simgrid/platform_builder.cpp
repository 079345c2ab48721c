#include "simulate/simgrid/platform_builder.hpp"

#include <algorithm>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <optional>
#include <string>
#include <unordered_set>

namespace dsgd::simulate {

namespace {

std::string quoted(const platforms::Platform& platform) {
  return "platform '" + (platform.name.empty() ? std::string("(unnamed)") : platform.name) + "'";
}

}  // namespace

void check_simulatable(const platforms::Platform& platform, int ranks) {
  const auto& topology = platform.network.topology;
  if (topology.kind() != platforms::TopologyKind::kStar) {
    throw UnavailableError(quoted(platform) + ": topology " + std::string(platforms::to_string(topology.kind())) +
                           " is not yet simulated; only star is");
  }
  if (ranks < 1) throw InputError("a simulated world needs at least 1 rank, got " + std::to_string(ranks));
  if (ranks > platform.nodes.count) {
    throw InputError(quoted(platform) + " has " + std::to_string(platform.nodes.count) + " nodes but the world has " +
                     std::to_string(ranks) + " ranks; the SimGrid executor places one rank per node");
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
  if (topology.link_bandwidth_Bps && !(*topology.link_bandwidth_Bps > 0)) {
    throw InputError(quoted(platform) + ": topology link_bandwidth_Bps must be > 0");
  }
  if (topology.link_latency_s && !(*topology.link_latency_s >= 0)) {
    throw InputError(quoted(platform) + ": topology link_latency_s must be >= 0");
  }
}

NodeRates node_rates(const platforms::Platform& platform) {
  NodeRates rates;
  rates.flops = platform.nodes.cpu.peak_flops;
  for (const auto& memory : platform.nodes.memories) {
    rates.memory_bandwidth_Bps = std::max(rates.memory_bandwidth_Bps, memory.bandwidth_Bps);
  }
  return rates;
}

std::vector<simgrid::s4u::Host*> build_platform(const platforms::Platform& platform, int ranks) {
  namespace s4u = simgrid::s4u;
  check_simulatable(platform, ranks);
  const auto& link = platform.network.link;
  const auto& topology = platform.network.topology;

  auto* zone = s4u::create_star_zone(platform.name.empty() ? "dsgd" : platform.name);
  // A backbone, when the platform names one, is shared by every message (SimGrid's cluster backbone).
  s4u::Link* backbone = nullptr;
  if (topology.link_bandwidth_Bps || topology.link_latency_s) {
    backbone = zone->create_link("backbone", topology.link_bandwidth_Bps.value_or(link.bandwidth_Bps))
                   ->set_latency(topology.link_latency_s.value_or(0.0))
                   ->set_sharing_policy(s4u::Link::SharingPolicy::SHARED)
                   ->seal();
  }

  std::vector<s4u::Host*> hosts;
  hosts.reserve(static_cast<std::size_t>(ranks));
  for (int node = 0; node < ranks; ++node) {
    const std::string suffix = std::to_string(node);
    auto* host = zone->create_host("node-" + suffix, platform.nodes.cpu.peak_flops);
    // Half of alpha on each end: a message crosses the sender's link up and the receiver's link down.
    auto* own =
        zone->create_split_duplex_link("link-" + suffix, link.bandwidth_Bps)->set_latency(link.latency_s / 2)->seal();
    if (backbone == nullptr) {
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{own, s4u::LinkInRoute::Direction::UP}},
                      /*symmetrical=*/true);
    } else {
      // Up to the centre through the backbone, down without it, so a message crosses the backbone once.
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                      {{own, s4u::LinkInRoute::Direction::UP}, s4u::LinkInRoute(backbone)}, /*symmetrical=*/false);
      zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr, {{own, s4u::LinkInRoute::Direction::DOWN}},
                      /*symmetrical=*/false);
    }
    hosts.push_back(host);
  }
  zone->seal();
  return hosts;
}

void install_segment_factors(const platforms::Platform& platform) {
  namespace s4u = simgrid::s4u;
  const auto& link = platform.network.link;
  if (link.segments.empty()) return;
  const auto& topology = platform.network.topology;
  const double base_latency_s = link.latency_s;  // what build_platform put on the route: two halves of it
  const std::optional<double> backbone_bandwidth = topology.link_bandwidth_Bps;
  auto* model = s4u::Engine::get_instance()->get_netzone_root()->get_network_model();

  // Route latency = the node links' base latency + the backbone's, if any: swap the base for the segment's.
  model->set_lat_factor_cb([link, base_latency_s](double size, const s4u::Host* src, const s4u::Host* dst,
                                                  const std::vector<s4u::Link*>& links,
                                                  const std::unordered_set<s4u::NetZone*>&) {
    if (src == dst) return 1.0;  // loopback: not the node link
    double route_s = 0;
    for (const auto* hop : links) route_s += hop->get_latency();
    if (!(route_s > 0)) return 1.0;
    return (route_s - base_latency_s + link.latency_s_for(size)) / route_s;
  });
  // The flow runs at its bottleneck's bandwidth times this factor: make that the segment's bandwidth, still
  // capped by a backbone the topology names.
  model->set_bw_factor_cb([link, backbone_bandwidth](double size, const s4u::Host* src, const s4u::Host* dst,
                                                      const std::vector<s4u::Link*>& links,
                                                      const std::unordered_set<s4u::NetZone*>&) {
    if (src == dst || links.empty()) return 1.0;
    double bottleneck = links.front()->get_bandwidth();  // B/s, as every bandwidth here
    for (const auto* hop : links) bottleneck = std::min(bottleneck, hop->get_bandwidth());
    double wanted = link.bandwidth_Bps_for(size);
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
