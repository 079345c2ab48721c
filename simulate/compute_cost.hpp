#pragma once
// What a compute step costs on a rank's site, shared by the SimGrid executor and the analytic level (neither
// needs the other): the roofline time and the node's compute noise.

#include <cstdint>

#include "core/comm.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// max(flops / (peak x the kernel class's efficiency), bytes / memory bandwidth); a batch copy ("copy") moves its
// bytes at the copy bandwidth x the class's efficiency. A bandwidth of 0 makes memory traffic free.
double compute_seconds(const RankSite& site, const ComputeStep& step);

// Compute noise (platforms::Noise): the factor of a node's compute step. Ranks of one node share it (a node is
// slow or fast as a whole), drawn from a counter-based generator of (seed, node, step), so a simulation repeats
// exactly and does not depend on the order ranks run in.
double noise_factor(const platforms::Noise& noise, std::uint64_t seed, int node, std::uint64_t step);

}  // namespace dsgd::simulate
