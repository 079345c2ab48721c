#pragma once
// How much of a core a rank takes while it waits for a message and every core computes (platforms::SharedChip's
// waiting_share): the threads executor's ranks sleep on a condition variable; the MPI executor's poll, sleeping
// between polls after a millisecond (measure/mpi/comm.cpp), and on an oversubscribed machine that polling still
// takes CPU time the computing ranks lose. `dsgd calibrate` measures both executors with this microbenchmark.

#include <functional>

#include "core/comm.hpp"

namespace dsgd::measure {

struct WaitingShare {
  double wall_s = 0;  // rank 0's wait
  double cpu_s = 0;   // CPU time rank 0 took meanwhile
  int computing = 0;  // ranks that computed meanwhile
  // The mean CPU time a computing rank took meanwhile: what a rank got of a core on this machine as it was then,
  // the baseline a waiting rank's cpu_s is small against even when other programs hold the cores.
  double computing_cpu_s = 0;

  double share() const { return wall_s > 0 ? cpu_s / wall_s : 0; }
};

// Run by every rank of `comm` (at least 2): rank 0 starts the others, then waits for each to report back; each
// other rank computes (a CPU-bound loop) for `seconds` first and reports the CPU time that took. Returns the
// measurement on rank 0 (zeros elsewhere); `cpu_seconds` is each rank's CPU clock (its thread's on threads, its
// process's on MPI). Throws InputError for fewer
// than 2 ranks or seconds <= 0.
WaitingShare measure_waiting_share(Comm& comm, double seconds, const std::function<double()>& cpu_seconds);

// Keeps the calling thread's core busy for `seconds` of wall time (arithmetic the compiler cannot drop): the
// computing ranks of this microbenchmark and of the loaded ping-pongs.
void compute_for(double seconds);

// CPU clocks: the calling thread's, and the whole process's (user + system).
double thread_cpu_seconds();
double process_cpu_seconds();

// The threads executor's waiting share on `ranks` threads (the cores + 1 for an oversubscribed machine).
WaitingShare threads_waiting_share(int ranks, double seconds);

}  // namespace dsgd::measure
