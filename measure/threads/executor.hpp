#pragma once
// The threads executor: one process, one std::thread per worker, messages copied between buffers through
// per-rank mailboxes. The quickest way to run an algorithm natively, and how the tests run every algorithm.
// Parallel to measure/mpi/executor.hpp and simulate/simgrid/executor.hpp.

#include <vector>

#include "core/comm.hpp"

namespace dsgd::measure::threads {

struct ThreadsResult {
  double wall_s = 0;
  std::vector<Breakdown> per_rank;
};

// Runs `worker` on options.size threads, each with its own Comm, and returns when all have returned. If any
// worker throws, the others are woken from their waits (they fail with CommError "aborted ...") and the first
// worker's exception is rethrown here. Throws InputError if options.size < 1.
ThreadsResult run_threads(const WorldOptions& options, const WorkerFunction& worker);

}  // namespace dsgd::measure::threads
