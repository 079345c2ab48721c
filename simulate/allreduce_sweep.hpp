#pragma once
// The allreduce sweep in simulation: each collective alone, size-only (no buffers), on a described platform, with
// its closed form beside it (collective_costs.hpp), in the entries the measured sweep writes
// (reports/allreduce_entry.hpp), so `dsgd bench allreduce` prints the three executors alike.

#include <cstddef>
#include <ostream>
#include <vector>

#include "core/collectives.hpp"
#include "platforms/platform.hpp"
#include "reports/results.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::simulate {

struct SimulatedSweepOptions {
  int ranks = 2;
  std::vector<std::size_t> sizes;  // in floats
  std::vector<AllreduceAlgorithm> algorithms;
  // By default one rank per node, so every message crosses the network the closed form describes; reductions run at
  // the rank's unit (a device of a GPU node) as the simulation computes them. With several ranks per node the
  // two-level forms price the ring and the hierarchical allreduces; the others have none.
  int ranks_per_node = 1;
  Fidelity fidelity = Fidelity::kAuto;
  double timeout_s = 600;  // simulated, of a rank's wait
};

// One entry per size and algorithm, in that order (fidelity the level that ran; counters closed_form_s where a
// closed form exists, and wall_s). A line per size to `log` (may be null). Throws what simgrid::run throws.
std::vector<reports::Entry> simulate_allreduce_sweep(const platforms::Platform& platform,
                                                     const SimulatedSweepOptions& options, std::ostream* log);

}  // namespace dsgd::simulate
