#pragma once
// The MPI executor: one OpenMPI process per worker, started by mpirun (measure/mpi/launch.hpp builds the command),
// each running the worker function on its rank's Comm (measure/mpi/comm.hpp). Parallel to
// measure/threads/executor.hpp and simulate/simgrid/executor.hpp.
//
// These functions live in dsgd::measure_mpi, which links OpenMPI, so only executables without SimGrid (dsgd-mpi,
// the MPI tests and benchmarks) may call them. The header itself names no MPI type.

#include <string>

#include "core/comm.hpp"
#include "core/world.hpp"
#include "measure/mpi/launch.hpp"

namespace dsgd::measure::mpi {

// MPI for the life of a main(): initialises MPI (asking for MPI_THREAD_SERIALIZED: a rank's stream thread calls
// MPI while its main thread does not; FUNNELED is accepted, and then streams run sequentially) unless it
// is already initialised, and finalises it on destruction if it did initialise it. MPI can be initialised once
// per process, so make one, first thing in main(). argc/argv may be null. Throws UnavailableError if MPI was
// already finalised or cannot start.
//
// MPI_Finalize waits for every rank: if a rank failed, end the world with MPI_Abort (app/ does) before this
// destructor runs.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }

 private:
  bool owned_ = false;
  int world_rank_ = 0;
  int world_size_ = 1;
};

// Runs `worker` on this process's rank of MPI_COMM_WORLD with a fresh MpiComm (collective: every rank calls it).
// Every rank returns the same shape as the other executors: per_rank holds every rank's breakdown (gathered after
// the workers returned, under the world's timeout), time_s the slowest rank's time inside its worker, wall_s this
// rank's; no events are recorded.
// If MPI is not initialised yet it is initialised here and finalised when the process exits normally (std::atexit),
// since it cannot be initialised a second time. If the worker throws, this rank's comm skips its collective
// cleanup and the exception propagates; the caller (app/) reports it and ends the world with MPI_Abort so the
// other ranks do not wait for this one until their timeouts.
WorldResult run(const WorldOptions& options, const WorkerFunction& worker);

}  // namespace dsgd::measure::mpi
