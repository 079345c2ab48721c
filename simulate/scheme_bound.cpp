#include "simulate/scheme_bound.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

namespace {

// What one node's NICs carry each way together.
double node_injection_Bps(const platforms::Platform& platform) {
  const double link = platform.network.link.bandwidth_Bps;
  if (!platform.nodes.nics) return link;
  return platform.nodes.nics->count * platform.nodes.nics->bandwidth_Bps.value_or(link);
}

// What device 0 of a node sends each way over its fastest links: its NVLinks together, its NVSwitch port, or its
// PCIe link.
double device_injection_Bps(const platforms::Platform& platform) {
  double nvlink = 0;
  if (const auto& mesh = platform.nodes.nvlink) {
    for (const auto& pair : mesh->pairs) {
      if (pair.a != 0 && pair.b != 0) continue;
      nvlink += pair.links * (pair.bandwidth_Bps > 0 ? pair.bandwidth_Bps : mesh->bandwidth_Bps.value_or(0));
    }
  }
  if (const auto& fabric = platform.nodes.nvswitch) nvlink = std::max(nvlink, fabric->bandwidth_Bps);
  return std::max(nvlink, device_link_Bps(platform, 0));
}

}  // namespace

SchemeBound scheme_bound(const platforms::Platform& platform, const ModelSpec& model, const std::string& algorithm,
                         const algorithms::Hyperparameters& hyper, int workers, int nodes, double compute_s) {
  if (workers < 1 || nodes < 1) throw InputError("scheme bound: needs at least one GPU and one node");
  if (!(platform.network.link.bandwidth_Bps > 0)) throw InputError(platform.name + ": no network bandwidth");
  SchemeBound bound;
  bound.compute_s = compute_s;
  const double gradient_bytes =
      static_cast<double>(model.parameters()) * (hyper.compression == Compression::kFp16 ? 2.0 : 4.0);
  const bool server = algorithms::find_algorithm(algorithm).info.has_master;
  const double p = workers;
  const double n = nodes;
  const double per_node = std::ceil(p / n);
  const double node_Bps = node_injection_Bps(platform);
  // A shard on the host is reached over the GPU's PCIe link; GPUs reduce among themselves over their fastest.
  const double gpu_Bps =
      server && device_link_Bps(platform, 0) > 0 ? device_link_Bps(platform, 0) : device_injection_Bps(platform);
  double bytes = 0;
  double bandwidth = 0;
  std::string what;
  if (nodes > 1) {
    bandwidth = node_Bps;
    bytes = (server ? 2.0 * per_node : 2.0) * gradient_bytes * (n - 1) / n;
    what = server ? "each node's NICs: its workers' pushes to remote shards and its shard's replies, 2 G S (N-1)/N"
                  : "each node's NICs: a bandwidth-optimal allreduce, 2 S (N-1)/N";
  } else if (workers > 1 || server) {
    bandwidth = gpu_Bps;
    bytes = server ? gradient_bytes : 2.0 * gradient_bytes * (p - 1) / p;
    what = server ? "each GPU's link to its shard: its push, S" : "each GPU's links: an allreduce, 2 S (P-1)/P";
  }
  const auto text = [](const std::string& link, double moved, double Bps) {
    return link + " = " + bytes_text(moved) + " at " + fixed(Bps / 1e9, 1) + " GB/s";
  };
  if (bytes > 0 && bandwidth > 0) {
    bound.link_s = bytes / bandwidth;
    bound.busiest = text(what, bytes, bandwidth);
  } else {
    bound.busiest = "no link: one GPU";
  }
  if (server || workers < 2 || !(gpu_Bps > 0)) return bound;
  if (hyper.allreduce == AllreduceAlgorithm::kRing && nodes > 1) {
    // One ring edge leaves each node, through one NIC.
    const double nic_Bps = node_Bps / (platform.nodes.nics ? platform.nodes.nics->count : 1);
    const double ring_bytes = 2.0 * gradient_bytes * (p - 1) / p;
    bound.pattern_s = ring_bytes / nic_Bps;
    bound.pattern = text("a flat ring's edge out of each node through one NIC, 2 S (P-1)/P", ring_bytes, nic_Bps);
  } else if (hyper.allreduce == AllreduceAlgorithm::kHierarchical && per_node > 1) {
    const double steps = std::ceil(std::log2(per_node));
    bound.pattern_s = 2 * steps * gradient_bytes / gpu_Bps + (nodes > 1 ? bound.link_s : 0.0);
    bound.pattern = text("a binomial reduce and broadcast inside a node, 2 ceil(log2 G) S over one GPU's links",
                         2 * steps * gradient_bytes, gpu_Bps) +
                    (nodes > 1 ? ", then the ring among the nodes" : "");
  }
  if (bound.pattern_s <= bound.link_s) {
    bound.pattern_s = 0;
    bound.pattern.clear();
  }
  return bound;
}

}  // namespace dsgd::simulate
