#pragma once
// A closed-form lower bound on a communication scheme's time per iteration (docs/communication-schemes.md
// "Bounds"): no scheme computes faster than one GPU alone, and none moves its bytes faster than the busiest link
// they must cross allows, even with every transfer overlapped with the compute:
//   bound = max(compute, the busiest link's bytes / its bandwidth)
// A simulated time more than twice its bound is spending time on something else than compute and bandwidth
// (latency, contention, serialisation at a server): the study says which it can tell.

#include <string>

#include "algorithms/algorithm.hpp"
#include "core/model_zoo.hpp"
#include "platforms/platform.hpp"

namespace dsgd::simulate {

struct SchemeBound {
  double compute_s = 0;  // one GPU's forward and backward
  double link_s = 0;     // the busiest link's bytes over its bandwidth
  std::string busiest;   // which link, and its bytes: "each node's 4 NICs: 2 S (N-1)/N = 187 MB at 50 GB/s"
  // What the scheme's own pattern moves over its busiest link where that is more than the bound's (a flat ring's
  // edges between nodes, a binomial tree's steps inside a node); 0 and empty where it moves no more.
  double pattern_s = 0;
  std::string pattern;
  double seconds() const { return compute_s > link_s ? compute_s : link_s; }
};

// The bound of `algorithm` with `hyper` at `workers` GPUs on `nodes` nodes of `platform` (GPUs per node filled
// first), the gradient of `model` exchanged once per iteration (half the bytes with fp16 compression):
//  * an allreduce (sync-sgd, wfbp-sgd and the other synchronous exchanges): across nodes each node's NICs carry at
//    least 2 S (N-1)/N each way (the bandwidth-optimal reduce-scatter + all-gather); inside one node each GPU's
//    links 2 S (P-1)/P;
//  * a sharded parameter server (a `servers` > 1 or an asynchronous algorithm with servers on the hosts): each
//    node's NICs carry its G workers' pushes to remote shards and its shard's replies to remote workers,
//    2 G S (N-1)/N each way; inside one node each GPU's link its push, S.
// A GPU's links are its NVLinks (or NVSwitch port) where it has them, else its PCIe link; a shard on a host is
// reached over the PCIe link. Beside the bound, what the scheme's own pattern moves: a flat ring (one edge leaves
// each node, through one NIC) 2 S (P-1)/P over that NIC; the hierarchical allreduce's binomial reduce and broadcast
// inside a node 2 ceil(log2 G) S over one GPU's links, then its ring among the nodes. Throws InputError for workers or
// nodes < 1 or a platform without a network bandwidth.
SchemeBound scheme_bound(const platforms::Platform& platform, const ModelSpec& model, const std::string& algorithm,
                         const algorithms::Hyperparameters& hyper, int workers, int nodes, double compute_s);

}  // namespace dsgd::simulate
