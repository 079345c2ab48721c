#pragma once
// What the executors share beyond the Comm interface (docs/design.md "Executors"): the result every run returns,
// and the capture of the first failure among a world's workers.

#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "core/breakdown.hpp"
#include "core/comm.hpp"

namespace dsgd {

// What a run of a world returns, on every executor (measure::threads::run, measure::mpi::run, simulate::simgrid::run,
// simulate::analytic::run). Times are in the executor's seconds: wall clock natively, simulated in simulation.
struct WorldResult {
  double time_s = 0;  // from the world's start until its last worker returned
  double wall_s = 0;  // wall time of the whole call (for a simulation: fork, engine, platform and run)
  // Each rank's time per category, indexed by rank. The analytic level runs one representative rank: one entry.
  std::vector<Breakdown> per_rank;
  // The ranks' steps as timeline spans, where the executor records them (SimGrid: SimulationOptions::trace_events),
  // and how many more it left out.
  std::vector<TimelineSpan> events;
  std::size_t events_dropped = 0;
};

// The first failure among a world's workers: the cause. The failures after it are mostly echoes of it (waits that
// were aborted because of it), so they are dropped. Safe to call from several threads.
class FirstFailure {
 public:
  // Keeps `error`, thrown by `rank`, unless a failure is kept already. Returns whether this one was kept.
  bool record(int rank, std::exception_ptr error);
  explicit operator bool() const;
  std::exception_ptr error() const;
  int rank() const;  // -1 while none is kept
  // Rethrows the kept failure, if there is one.
  void rethrow_if_any() const;

 private:
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  int rank_ = -1;
};

// The message of an exception: what() of a std::exception, "unknown exception" otherwise.
std::string exception_text(const std::exception_ptr& error);

}  // namespace dsgd
