#pragma once
// Numeric simulation (docs/time-to-accuracy.md): training with any algorithm of the catalog in SimGrid with
// payloads. Every simulated worker computes real gradients with the native kernels on its own batches of real
// data, and the messages carry the real weights, while the simulated clock advances by the platform's cost model
// (compute steps cost their FLOPs at the platform's rates, messages their bytes on its links), never by this
// machine's time. So an asynchronous algorithm's interleaving -- which push the server takes first, how stale a
// gradient is -- follows the simulated platform, and test accuracy is known at points of simulated time
// (evaluations cost no simulated time). Deterministic algorithms give the native runs' weights bit for bit.
//
// Cost: every worker's kernels run on this machine; SimGrid runs its actors in one thread, but the gradients of
// ranks that compute at the same simulated time run side by side on NumericOptions::kernel_threads threads, so wall
// time is about the sum of the workers' native compute time over the cores; memory holds every replica at once.
// estimate_numeric_memory() says how much, and simulate_numeric() refuses a world that would not fit.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/memory_estimate.hpp"
#include "algorithms/runner.hpp"
#include "platforms/platform.hpp"
#include "reports/results.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::simulate {

// The memory a numeric simulation takes beyond the data already loaded (algorithms/memory_estimate.hpp: the same
// as a native run's, every rank's replica in this one process).
using algorithms::kModelVectors;
using algorithms::kRankOverheadBytes;
using algorithms::MemoryEstimate;
// `kernel_threads`: NumericOptions::kernel_threads (rank 0 evaluates on one evaluator per thread, at most one per
// batch of the test set).
MemoryEstimate estimate_numeric_memory(const algorithms::RunOptions& run, std::size_t test_images,
                                       int kernel_threads = 1);

struct NumericOptions {
  algorithms::RunOptions run;
  PlacementOptions placement;
  std::uint64_t noise_seed = 1;
  double timeout_s = 1e9;         // simulated seconds any wait may last
  double wall_timeout_s = 0;      // kill the simulation after this much wall time (0: no limit)
  double memory_limit_bytes = 0;  // 0: what this machine has available now (core/memory.hpp)
  // OS threads computing the ranks' gradients side by side (SimulationOptions::kernel_threads; 0: one per
  // processor). Every count gives the same weights.
  int kernel_threads = 0;
  // Called in the simulation's process after each evaluation (seconds are simulated).
  std::function<void(const algorithms::RunPoint&)> progress;
};

struct NumericRun {
  algorithms::RunResult result;  // seconds simulated: curve, train_seconds, time_to_target_s, images_per_second
  MemoryEstimate memory;
  int nodes = 0;            // nodes the ranks occupy
  double wall_s = 0;        // of the whole simulation
  double setup_wall_s = 0;  // engine and platform
  double run_wall_s = 0;    // inside the engine's run: the ranks' set-up, iterations and ends
};

// Runs options.run on `platform` with `data`. Throws InputError (before anything runs) for bad options or when the
// memory estimate exceeds the limit -- the message gives both -- and what simgrid::run throws (DivergedError when a
// worker's loss diverged, TimeoutError past wall_timeout_s).
NumericRun simulate_numeric(const platforms::Platform& platform, const NumericOptions& options,
                            const algorithms::RunData& data);

// The simulation's part of a numeric run's results entry (the rest is algorithms::to_entry of run.result): named
// and placed on `platform`, message fidelity, a simulated clock, the nodes, the wall time and the memory estimate.
void add_simulation(reports::Entry& entry, const NumericRun& run, const std::string& platform);

}  // namespace dsgd::simulate
