#pragma once
// Closed-form alpha-beta-gamma times of the collectives in core/collectives.hpp: the "analytic" fidelity level
// (docs/design.md "Fidelity levels"), microseconds where replaying every message in SimGrid takes seconds at
// thousands of ranks.
//
// Model (Thakur, Rabenseifner and Gropp 2005, "Optimization of collective communication operations in MPICH"):
// a message of n bytes between two ranks takes alpha + n * beta, every rank sends and receives at the same time
// on separate links (full duplex, no contention in a star), and a local reduction of c floats takes c * gamma.
// Each form follows the exact schedule of core/collectives.cpp (which rank waits for which message), not the
// textbook algorithm, so it equals the SimGrid executor's time on a flat alpha-beta star (tests/simulate holds the
// two within 1%). P is the number of ranks, n the buffer's bytes, c its floats, P' = 2^floor(log2 P), and
// L = ceil(log2 P):
//
//   broadcast             L (alpha + n beta)                          the root sends L times, one after the other
//   reduce                L (alpha + n beta + c gamma)                each round: receive, then add
//   allreduce ring        2 (P-1) alpha + 2 (P-1)/P n beta + (P-1)/P c gamma
//   allreduce recursive   log2 P' (alpha + n beta + c gamma) + fold
//     doubling
//   allreduce             2 log2 P' alpha + 2 (P'-1)/P' n beta + (P'-1)/P' c gamma + fold
//     Rabenseifner
//   allreduce reduce +    reduce + broadcast                          the broadcast starts when the root has the sum
//     broadcast
//   fold (P != P')        2 alpha + 2 n beta + c gamma                 Thakur's pairing of the first 2 (P - P') ranks:
//                                                                      in before, and the result back out after
//   round-robin gather    (P-1) (alpha + n beta), x 2 with a reply      the master serves one worker at a time
//   parameter server      requests (2 alpha + (push + reply bytes) beta)  one server, always busy
//   sharded parameter     requests (2 alpha + 2 n beta) + requests      S servers, workers in lockstep: an exchange
//     server              ceil(c/S) u                                  is S messages of c/S floats each way sharing
//                                                                      the worker's link; u = update per float
//
// Compressed allreduces (core/compressed_collectives.hpp), ch = ceil(c/P) floats per ring chunk, m = the message
// bytes of one rank (onebit_bytes / topk_bytes), k = the top-k count; the encode and decode FLOPs are those the
// header names (kHalf*, kOneBitEncodeFlops, kTopKEncodeFlops, kDecodeFlops), all at gamma:
//
//   fp16 ring             ch gamma + (P-1) (alpha + 2 ch beta + 3 ch gamma) + (P-1) (alpha + 2 ch beta) + c gamma
//                         round the own chunk, reduce-scatter of halves (widen, add, round), allgather, widen
//   onebit                4 c gamma + (P-1) (alpha + m beta) + P c gamma       encode, ring allgather, decode P
//   topk                  3 c gamma + (P-1) (alpha + m beta) + (c + P k) gamma  encode, ring allgather, zero + decode
//
// The hierarchical allreduces see two networks: inside a node (alpha_i, beta_i) and between nodes (alpha_e,
// beta_e), with N nodes of L ranks each (P = N L), and gamma the rate of a rank's reductions:
//
//   hierarchical          reduce_i(L) + ring_e(N) + broadcast_i(L)    the forms above, each with its level's alpha,
//                         = L_i (2 alpha_i + 2 n beta_i + c gamma)     beta; L_i = ceil(log2 L)
//                           + 2 (N-1) alpha_e + 2 (N-1)/N n beta_e + (N-1)/N c gamma
//   hierarchical_2d       (L-1) (2 alpha_i + 2 n/L beta_i + c/L gamma)            reduce-scatter and allgather in
//                         + 2 (N-1) alpha_e + 2 (N-1)/N n beta_e + (N-1)/(N L) c gamma     the node, then L rings
//                                                                     of n/L bytes sharing the node's link
//   ring on two levels    (P-1) (2 max(alpha_i + n/P beta_i, alpha_e + n/P beta_e) + c/P gamma): every step waits
//                                                                     for its slowest pair, one that crosses nodes
//
// hierarchical_2d's L rings cross the network at once and share the node's bottleneck to it (one NIC, one PCIe
// uplink): each moves at 1/(L beta_e), so all L together move n/N bytes per step as the leaders' one ring does; what
// it saves is the node's share (L_i rounds of n bytes become 2 (L-1)/L n). With one rank per node (L = 1) both
// are the ring, and so is allreduce_time() of them on one level: every rank a node of its own.
//
// Ring and Rabenseifner cut the buffer into whole floats: chunks of c/P (halves of c/2^i) are rounded up, since the
// largest piece sets the pace of each step; the forms above are the limit of divisible counts.
//
// The gather's and the server's handlers are the caller's code and cost nothing here. With P = 1 every
// collective costs 0.

#include <cstddef>
#include <span>

#include "core/collectives.hpp"
#include "core/compressed_collectives.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// The three parameters of the model.
struct AlphaBetaGamma {
  double latency_s = 0;      // alpha
  double bandwidth_Bps = 0;  // 1 / beta
  double flops = 0;          // 1 / gamma: a float added per FLOP at this rate; 0 or infinity: reductions are free

  double message_s(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
  double reduce_s(double floats) const { return flops > 0 ? floats / flops : 0.0; }
};

// The model of `platform`: alpha and bandwidth of its node link (plus the backbone of a star that has one: its
// latency added, its bandwidth if lower), gamma from the CPU peak, as simulate/simgrid builds the platform.
AlphaBetaGamma alpha_beta_gamma(const platforms::Platform& platform);

// Seconds for `ranks` ranks to run the collective on `count` floats. Throws InputError for ranks < 1.
double broadcast_time(const AlphaBetaGamma& model, int ranks, std::size_t count);
double reduce_time(const AlphaBetaGamma& model, int ranks, std::size_t count);
double allreduce_time(const AlphaBetaGamma& model, AllreduceAlgorithm algorithm, int ranks, std::size_t count);
// core/compressed_allreduce of `count` floats (kNone: the ring allreduce).
double compressed_allreduce_time(const AlphaBetaGamma& model, const CompressionOptions& compression, int ranks,
                                 std::size_t count);

// The two-level model of the hierarchical allreduces.
struct TwoLevelModel {
  AlphaBetaGamma intra;    // between two ranks of a node; `flops`: a rank's reduction rate
  AlphaBetaGamma inter;    // between ranks of two nodes; its bandwidth is the node's bottleneck to the network
  int nodes = 1;           // N
  int ranks_per_node = 1;  // L
};

// The model of `ranks` ranks placed on `platform` by `placement` (all nodes equally full), priced as
// simulate/analytic/route_model.hpp prices messages of `message_bytes` bytes: intra from rank 0 to the next rank
// of its node, inter from rank 0 to the first rank of the next node (either 0 where there is none), gamma from
// rank 0's elementwise rate (its peak times the kernel class's efficiency, as the message level computes it).
// Throws InputError for nodes of unequal rank counts, and what place_ranks throws.
TwoLevelModel two_level_model(const platforms::Platform& platform, int ranks, const PlacementOptions& placement,
                              double message_bytes);

// Seconds of the allreduce on `count` floats over model.nodes x model.ranks_per_node ranks: the hierarchical ones
// and the ring (forms above). Throws InputError for the other algorithms (their messages leaving a node at once
// contend for its link: no closed form here) and for fewer than one node or rank.
double two_level_allreduce_time(const TwoLevelModel& model, AllreduceAlgorithm algorithm, std::size_t count);
double round_robin_gather_time(const AlphaBetaGamma& model, int ranks, std::size_t count, bool reply);
// The server's time to serve `requests` pushes of push_count floats, each answered with reply_count floats.
double parameter_server_time(const AlphaBetaGamma& model, std::size_t push_count, std::size_t reply_count,
                             std::size_t requests);
// A parameter server of `count` floats sharded over `servers` ranks (core/collectives.hpp), serving `requests`
// exchanges (workers x exchanges each) from workers in lockstep. First come, first served, every server takes the
// same worker's push first, so the exchanges are served one worker at a time; each is S parallel messages of about
// c/S floats each way, which share the worker's link: 2 (alpha + n beta), as with one server. A server update of
// `update_flops_per_float` FLOPs per float before its reply (at the model's rate) costs ceil(c/S) floats' worth:
// that part, not the transfer, shrinks with S. Throws InputError for servers < 1.
double sharded_parameter_server_time(const AlphaBetaGamma& model, std::size_t count, int servers, std::size_t requests,
                                     double update_flops_per_float);

// Overlapped collectives (wait-free backpropagation's buckets, algorithms/README.md): collective k becomes ready
// ready_s[k] seconds after the backward pass began (non-decreasing; the last one at the pass's end), starts once it
// is ready and collective k-1 has ended, and takes cost_s[k]: end_k = max(ready_s[k], end_(k-1)) + cost_s[k]. Returns
// the exposed time end_last - ready_s.back(), what the worker waits after its backward pass (0 without
// collectives); the rest of sum(cost_s) ran beside the pass. Throws InputError for spans of different sizes.
double pipelined_exposed_s(std::span<const double> ready_s, std::span<const double> cost_s);

}  // namespace dsgd::simulate
