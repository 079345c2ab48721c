#pragma once
// Weak scaling in simulation: one algorithm of the catalog, size-only (no data, no weights: the Trainer's
// size-only mode), on a platform at several world sizes, each worker keeping its batch. For each size: simulated
// seconds per iteration, weak-scaling efficiency T(first size) / T(size), and every rank's time breakdown. This is
// what `dsgd simulate` prints and what the reproduce manifest's scaling tables (seed 000 Table 4, Fig 12) hold.
//
// Time per iteration is the training time of the run (rank 0's clock, every rank done with the round) divided by
// its iterations; the first iterations include the collectives' schedule derivation only in wall time, never in
// simulated time, so a few iterations give the steady state.

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::simulate {

// From this many ranks -- or on a platform SimGrid cannot build (simgrid_can_build) -- kAuto simulates a
// synchronous algorithm without a master at the analytic level (one representative rank, closed-form collectives:
// simulate/analytic/executor.hpp); otherwise the executor's own choice (flow from kFlowFromRanks, else message).
// The flow level's 4352-rank point of a KNL sweep at one rank per core takes seconds.
inline constexpr int kAnalyticFromRanks = 16384;

struct ScalingOptions {
  std::string algorithm;  // a name of algorithms/'s catalog
  std::string model = "googlenet";
  algorithms::Hyperparameters hyper;
  std::vector<int> workers;     // one simulation per entry, in order
  std::int64_t iterations = 3;  // per worker and simulation
  // Iterations per worker between the runner's round ends (where every rank meets to sum the losses, as before a
  // native run's test evaluation); 0: one round. A native run measured in rounds is predicted in the same rounds:
  // each round end waits for the slowest worker, which a single round averages away.
  std::int64_t round_iterations = 0;
  int ranks_per_node = 0;  // PlacementOptions::ranks_per_node
  Fidelity fidelity = Fidelity::kAuto;
  std::uint64_t noise_seed = 1;
  std::size_t trace_events = 0;              // timeline spans kept per simulation (see SimulationOptions)
  bool analytic_recorded_schedules = false;  // SimulationOptions::analytic_recorded_schedules
  double wall_timeout_s = 600;               // per simulation
  bool fold_fatpipe_flows = true;            // SimulationOptions::fold_fatpipe_flows
  bool flow_replicas = true;                 // SimulationOptions::flow_replicas
  int jobs = 0;                              // simulations run side by side (0: one per core; the analytic level: 1)
};

struct ScalingPoint {
  int workers = 0;
  int ranks = 0;                     // workers plus a master where the algorithm has one
  int nodes = 0;                     // nodes the ranks occupy
  double seconds_per_iteration = 0;  // simulated
  double efficiency = 0;             // T(first point) / T(this point)
  Fidelity fidelity = Fidelity::kMessage;
  std::vector<Breakdown> per_rank;  // simulated seconds per category over the whole run
  // Rank 0's communication per iteration: exposed, what it waited for (its gpu-gpu para), and overlapped, what ran
  // beside its backward pass (RunResult::overlapped_comm_s; 0 without a stream).
  double exposed_comm_s_per_iteration = 0;
  double overlapped_comm_s_per_iteration = 0;
  // Bytes a worker sent per iteration, mean over the workers (algorithms::bytes_sent_per_iteration), and the
  // master's where the algorithm has one (else < 0).
  double bytes_sent_per_iteration = 0;
  double master_bytes_sent_per_iteration = -1;
  double wall_s = 0;  // wall time of the simulation
  // How a worker's layer kernels were priced (KernelPricing::describe): "14 kernels: 10 from the kernel profile, 4
  // by the kernel model", or "whole steps at their class's rate".
  std::string compute_pricing;
  std::vector<TimelineSpan> timeline;
  std::size_t timeline_dropped = 0;
};

// Throws InputError / UnknownNameError for bad options (an unknown algorithm or model, no sizes, a size the
// platform cannot hold), and what the simulation throws.
std::vector<ScalingPoint> simulate_weak_scaling(const platforms::Platform& platform, const ScalingOptions& options);
// Several sweeps on one platform, their points side by side on up to `jobs` cores (0: every core; see
// ScalingOptions::jobs): one vector of points per sweep, in order.
std::vector<std::vector<ScalingPoint>> simulate_weak_scaling(const platforms::Platform& platform,
                                                             const std::vector<ScalingOptions>& sweeps, int jobs = 0);

}  // namespace dsgd::simulate
