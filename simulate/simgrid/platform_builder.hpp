#pragma once
// Turns a dsgd platform description (platforms/platform.hpp) into SimGrid hosts and links.
//
// For now one shape is simulated: the flat alpha-beta star. Every node is a host whose speed is the node's CPU
// peak (single-precision FLOP/s); every host has a private split-duplex link of latency alpha/2 and the node
// link's bandwidth, so a message of n bytes between two nodes costs alpha + n / bandwidth end to end, as the
// platform's Link promises (tests/simulate/platform_builder_test.cpp holds SimGrid to it). A star with a shared
// backbone (Topology::link_bandwidth_Bps / link_latency_s) routes every message through one more shared link of
// that bandwidth and latency. A piecewise link (Link::segments) is built with its representative latency and
// bandwidth; install_segment_factors() then scales each message to its segment's values. Fat trees, dragonflies,
// tori and the intra-node topologies (KNL mesh, PCIe trees) come later; until then they are refused with
// UnavailableError rather than flattened into a star.
//
// SimGrid's types stay out of this header (the simulate library links SimGrid privately).

#include <vector>

#include "core/error.hpp"
#include "platforms/platform.hpp"

namespace simgrid::s4u {
class Host;
}  // namespace simgrid::s4u

namespace dsgd::simulate {

// What the simulation needs to know about a node beyond its host: numbers the executor charges without SimGrid.
struct NodeRates {
  double flops = 0;                 // host speed, FLOP/s (every kernel class runs at it for now)
  double memory_bandwidth_Bps = 0;  // the node's fastest memory; 0 when the platform lists none
};

// Throws unless `ranks` workers can be simulated on `platform`, one per node (rank r on node r):
//  * UnavailableError for a topology other than a star ("platform 'cori-knl': topology dragonfly is not yet
//    simulated; only star is"),
//  * InputError for ranks < 1, more ranks than nodes, or a non-positive link bandwidth, negative latency or
//    non-positive CPU peak, or link segments that are not as the loader requires (first at 0 bytes, ascending,
//    latency >= 0, bandwidth > 0).
// Needs no SimGrid engine, so the executor checks before it starts one.
void check_simulatable(const platforms::Platform& platform, int ranks);

// Rates of one node of `platform`.
NodeRates node_rates(const platforms::Platform& platform);

// Builds hosts for the first `ranks` nodes of `platform` in the running SimGrid engine (one per process: see
// simulate/simgrid/executor.hpp) and returns them in node order. A star is symmetric, so nodes beyond `ranks` would
// carry no traffic and are not built. Calls check_simulatable first. Must be called before Engine::run().
std::vector<simgrid::s4u::Host*> build_platform(const platforms::Platform& platform, int ranks);

// Makes every message between two hosts of `platform` cost its link segment's latency + n / bandwidth (plus the
// backbone's latency, and capped by the backbone's bandwidth, where the topology has one), through SimGrid's
// network factor callbacks on the root netzone's network model: SimGrid multiplies a message's route latency by the
// latency factor and the rate its bottleneck link allows by the bandwidth factor, so the factors are the segment's
// values over the route's. Does nothing for a link without segments. Call after build_platform(), before
// Engine::run(). SimGrid takes either a model's configured factors or callbacks, not both, and the callbacks
// replace LV08's and SMPI's own size-dependent factors: the executor installs them under CM02 only, the pure
// alpha-beta model the segments describe.
void install_segment_factors(const platforms::Platform& platform);

// A flat alpha-beta star of `nodes` identical nodes, for tests and calibration: a message of n bytes between two
// nodes costs latency_s + n / bandwidth_Bps, and a node computes `flops` FLOP/s. No memories, devices or noise.
// Throws InputError for nodes < 1, latency_s < 0, bandwidth_Bps <= 0 or flops <= 0.
platforms::Platform flat_platform(int nodes, double latency_s, double bandwidth_Bps, double flops);

}  // namespace dsgd::simulate
