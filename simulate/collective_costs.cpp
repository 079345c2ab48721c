#include "simulate/collective_costs.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "core/error.hpp"
#include "simulate/analytic/route_model.hpp"

namespace dsgd::simulate {

namespace {

void check_ranks(int ranks) {
  if (ranks < 1) throw InputError("a collective needs at least 1 rank, got " + std::to_string(ranks));
}

// ceil(log2 P): the rounds of a binomial tree.
int tree_rounds(int ranks) { return static_cast<int>(std::bit_width(static_cast<unsigned>(ranks - 1))); }

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

double bytes_of(std::size_t count) { return static_cast<double>(count * sizeof(float)); }

// Thakur's fold for P not a power of two: even ranks of the first 2(P - P') send their buffer to the odd
// neighbour, which adds it (in); at the end the odd ones send the result back (out).
double fold_time(const AlphaBetaGamma& model, int ranks, std::size_t count) {
  if (std::has_single_bit(static_cast<unsigned>(ranks))) return 0;
  return 2 * model.message_s(bytes_of(count)) + model.reduce_s(static_cast<double>(count));
}

}  // namespace

AlphaBetaGamma alpha_beta_gamma(const platforms::Platform& platform) {
  const auto& link = platform.network.link;
  const auto& topology = platform.network.topology;
  AlphaBetaGamma model;
  model.latency_s = link.latency_s;
  model.bandwidth_Bps = link.bandwidth_Bps;
  model.flops = platform.nodes.cpu.peak_flops;
  if (topology.kind() == platforms::TopologyKind::kStar) {
    // A star's backbone is one more hop on every message (simulate/simgrid/platform_builder.hpp).
    model.latency_s += topology.link_latency_s.value_or(0.0);
    if (topology.link_bandwidth_Bps) model.bandwidth_Bps = std::min(model.bandwidth_Bps, *topology.link_bandwidth_Bps);
  }
  return model;
}

double broadcast_time(const AlphaBetaGamma& model, int ranks, std::size_t count) {
  check_ranks(ranks);
  // Every rank's subtree is served largest first, so the root's L sequential sends are the critical path.
  return tree_rounds(ranks) * model.message_s(bytes_of(count));
}

double reduce_time(const AlphaBetaGamma& model, int ranks, std::size_t count) {
  check_ranks(ranks);
  // A child at distance 2^i is ready after its own i rounds, exactly when its parent reaches round i.
  return tree_rounds(ranks) * (model.message_s(bytes_of(count)) + model.reduce_s(static_cast<double>(count)));
}

double allreduce_time(const AlphaBetaGamma& model, AllreduceAlgorithm algorithm, int ranks, std::size_t count) {
  check_ranks(ranks);
  if (ranks == 1) return 0;  // core's allreduce returns at once
  const double p = ranks;
  const double n = bytes_of(count);
  const double c = static_cast<double>(count);
  switch (algorithm) {
    case AllreduceAlgorithm::kHierarchical:
    case AllreduceAlgorithm::kHierarchical2d:  // every rank a node of its own: the leaders' (lanes') ring
    case AllreduceAlgorithm::kRing: {
      // P-1 reduce-scatter steps (send a chunk, receive a chunk, add it), then P-1 allgather steps. Chunks differ
      // by one float when P does not divide the count; the largest sets the pace of every step.
      const double chunk = static_cast<double>(ceil_div(count, static_cast<std::size_t>(ranks)));
      return (p - 1) * (2 * model.message_s(chunk * sizeof(float)) + model.reduce_s(chunk));
    }
    case AllreduceAlgorithm::kRecursiveDoubling: {
      const int steps = std::bit_width(static_cast<unsigned>(ranks)) - 1;  // log2 P'
      return steps * (model.message_s(n) + model.reduce_s(c)) + fold_time(model, ranks, count);
    }
    case AllreduceAlgorithm::kRabenseifner: {
      // Recursive halving exchanges and adds c/2, c/4, ..., c/P' floats; recursive doubling sends them back. An odd
      // range splits into halves one float apart; the larger, ceil(c / 2^i), sets the pace of step i.
      const int steps = std::bit_width(static_cast<unsigned>(ranks)) - 1;
      double total = fold_time(model, ranks, count);
      for (int step = 1; step <= steps; ++step) {
        const double half = static_cast<double>(ceil_div(count, std::size_t{1} << step));
        total += 2 * model.message_s(half * sizeof(float)) + model.reduce_s(half);
      }
      return total;
    }
    case AllreduceAlgorithm::kReduceBroadcast:
      return reduce_time(model, ranks, count) + broadcast_time(model, ranks, count);
  }
  return 0;
}

double compressed_allreduce_time(const AlphaBetaGamma& model, const CompressionOptions& compression, int ranks,
                                 std::size_t count) {
  check_ranks(ranks);
  if (ranks == 1) return 0;  // nothing is exchanged, nothing encoded
  const double p = ranks;
  const double c = static_cast<double>(count);
  const double message = static_cast<double>(compressed_bytes(compression, count));
  switch (compression.kind) {
    case Compression::kNone:
      return allreduce_time(model, AllreduceAlgorithm::kRing, ranks, count);
    case Compression::kFp16: {
      const double chunk = static_cast<double>(ceil_div(count, static_cast<std::size_t>(ranks)));
      const double half_chunk_bytes = chunk * sizeof(std::uint16_t);
      return model.reduce_s(kHalfConvertFlops * chunk) +
             (p - 1) * (model.message_s(half_chunk_bytes) + model.reduce_s(kHalfAccumulateFlops * chunk)) +
             (p - 1) * model.message_s(half_chunk_bytes) + model.reduce_s(kHalfConvertFlops * c);
    }
    case Compression::kOneBit:
      return model.reduce_s(kOneBitEncodeFlops * c) + (p - 1) * model.message_s(message) +
             model.reduce_s(kDecodeFlops * p * c);
    case Compression::kTopK: {
      const double k = static_cast<double>(topk_count(count, compression.topk_ratio));
      return model.reduce_s(kTopKEncodeFlops * c) + (p - 1) * model.message_s(message) +
             model.reduce_s(kDecodeFlops * (c + p * k));
    }
  }
  return 0;
}

TwoLevelModel two_level_model(const platforms::Platform& platform, int ranks, const PlacementOptions& placement,
                              double message_bytes) {
  const RouteModel routes(platform, ranks, placement);
  const auto& sites = routes.placed_sites();  // the first node's ranks, at least
  TwoLevelModel model;
  model.nodes = routes.nodes();
  model.ranks_per_node =
      static_cast<int>(std::count_if(sites.begin(), sites.end(), [](const RankSite& site) { return site.node == 0; }));
  if (static_cast<long long>(model.nodes) * model.ranks_per_node != ranks) {
    throw InputError("two-level model: " + std::to_string(ranks) + " ranks do not fill " + std::to_string(model.nodes) +
                     " nodes of " + std::to_string(model.ranks_per_node) + " equally");
  }
  const auto toward = [&](int to) {
    const auto price = routes.price(0, to, message_bytes);
    return AlphaBetaGamma{price.latency_s, price.bandwidth_Bps, 0};
  };
  model.intra = model.ranks_per_node > 1 ? toward(1) : AlphaBetaGamma{};
  model.inter = model.nodes > 1 ? toward(model.ranks_per_node) : AlphaBetaGamma{};
  model.intra.flops = model.inter.flops = sites.front().peak_flops * sites.front().efficiency.of("elementwise");
  return model;
}

double two_level_allreduce_time(const TwoLevelModel& model, AllreduceAlgorithm algorithm, std::size_t count) {
  if (model.nodes < 1 || model.ranks_per_node < 1) {
    throw InputError("two-level model: needs at least 1 node of at least 1 rank, got " + std::to_string(model.nodes) +
                     " of " + std::to_string(model.ranks_per_node));
  }
  const int nodes = model.nodes;
  const int local = model.ranks_per_node;
  switch (algorithm) {
    case AllreduceAlgorithm::kHierarchical:
      return reduce_time(model.intra, local, count) +
             allreduce_time(model.inter, AllreduceAlgorithm::kRing, nodes, count) +
             broadcast_time(model.intra, local, count);
    case AllreduceAlgorithm::kHierarchical2d: {
      // Shards of ceil(c / L) floats (the largest sets the pace), each ring-allreduced across the nodes by L rings
      // that share the node's bottleneck.
      const std::size_t shard = ceil_div(count, static_cast<std::size_t>(local));
      const double node_s =
          (local - 1) * (2 * model.intra.message_s(bytes_of(shard)) + model.intra.reduce_s(static_cast<double>(shard)));
      AlphaBetaGamma shared = model.inter;
      shared.bandwidth_Bps /= local;
      return node_s + allreduce_time(shared, AllreduceAlgorithm::kRing, nodes, shard);
    }
    case AllreduceAlgorithm::kRing: {
      const int ranks = nodes * local;
      if (ranks == 1) return 0;
      const std::size_t chunk = ceil_div(count, static_cast<std::size_t>(ranks));
      double step_s = local > 1 ? model.intra.message_s(bytes_of(chunk)) : 0.0;
      if (nodes > 1) step_s = std::max(step_s, model.inter.message_s(bytes_of(chunk)));
      return (ranks - 1) * (2 * step_s + model.intra.reduce_s(static_cast<double>(chunk)));
    }
    default:
      throw InputError("no two-level closed form for allreduce " + std::string(to_string(algorithm)) +
                       ": its messages leaving a node at once contend for the node's link");
  }
}

double round_robin_gather_time(const AlphaBetaGamma& model, int ranks, std::size_t count, bool reply) {
  check_ranks(ranks);
  return (ranks - 1) * (reply ? 2 : 1) * model.message_s(bytes_of(count));
}

double parameter_server_time(const AlphaBetaGamma& model, std::size_t push_count, std::size_t reply_count,
                             std::size_t requests) {
  return static_cast<double>(requests) *
         (model.message_s(bytes_of(push_count)) + model.message_s(bytes_of(reply_count)));
}

double sharded_parameter_server_time(const AlphaBetaGamma& model, std::size_t count, int servers, std::size_t requests,
                                     double update_flops_per_float) {
  if (servers < 1)
    throw InputError("a sharded parameter server needs at least 1 server, got " + std::to_string(servers));
  // The largest shard (shard_of's split) sets when the last reply leaves.
  const double largest = static_cast<double>(ceil_div(count, static_cast<std::size_t>(servers)));
  return parameter_server_time(model, count, count, requests) +
         static_cast<double>(requests) * model.reduce_s(largest * update_flops_per_float);
}

double pipelined_exposed_s(std::span<const double> ready_s, std::span<const double> cost_s) {
  if (ready_s.size() != cost_s.size()) {
    throw InputError("pipelined_exposed_s: " + std::to_string(ready_s.size()) + " ready times for " +
                     std::to_string(cost_s.size()) + " costs");
  }
  if (ready_s.empty()) return 0;
  double end_s = 0;
  for (std::size_t k = 0; k < ready_s.size(); ++k) end_s = std::max(ready_s[k], end_s) + cost_s[k];
  return end_s - ready_s.back();
}

}  // namespace dsgd::simulate
