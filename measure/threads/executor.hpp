#pragma once
// The threads executor: one process, one std::thread per worker, messages copied between buffers through
// per-rank mailboxes. The quickest way to run an algorithm natively, and how the tests run every algorithm.
// Parallel to measure/mpi/executor.hpp and simulate/simgrid/executor.hpp.

#include "core/comm.hpp"
#include "core/world.hpp"

namespace dsgd::measure::threads {

// Runs `worker` on options.size threads, each with its own Comm, and returns when all have returned: time_s and
// wall_s are the wall time of the run, per_rank has every rank's breakdown, no events are recorded. If any worker
// throws, the others are woken from their waits (they fail with CommError "aborted ...") and the first worker's
// exception is rethrown here. Throws InputError for a world check_world refuses.
WorldResult run(const WorldOptions& options, const WorkerFunction& worker);

}  // namespace dsgd::measure::threads
