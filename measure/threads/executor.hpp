#pragma once
// The threads executor: one process, one std::thread per worker, messages copied between buffers through
// per-rank mailboxes. The quickest way to run an algorithm natively, and how the tests run every algorithm.
// Parallel to measure/mpi/executor.hpp and simulate/simgrid/executor.hpp.

#include <functional>
#include <thread>

#include "core/comm.hpp"
#include "core/world.hpp"

namespace dsgd::measure::threads {

// Runs `worker` on options.size threads, each with its own Comm, and returns when all have returned: time_s and
// wall_s are the wall time of the run, per_rank has every rank's breakdown, no events are recorded. If any worker
// throws, the others are woken from their waits (they fail with CommError "aborted ...") and the first worker's
// exception is rethrown here. Throws InputError for a world check_world refuses. If a thread cannot be created (out
// of threads or memory), the started ones are woken from their waits and joined, and UnavailableError says so:
// "threads executor: cannot create thread 37 of 64: Resource temporarily unavailable".
WorldResult run(const WorldOptions& options, const WorkerFunction& worker);

// How run starts a rank's thread: std::thread by default. Tests pass one that throws, as a system out of threads.
using ThreadStarter = std::function<std::thread(std::function<void()>)>;
WorldResult run(const WorldOptions& options, const WorkerFunction& worker, const ThreadStarter& start_thread);

}  // namespace dsgd::measure::threads
